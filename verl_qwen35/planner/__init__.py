"""Layout search, judged by the preflight's own rules and ranked by the memory and step-cost models.

Also the plan a dry run prints.
"""
