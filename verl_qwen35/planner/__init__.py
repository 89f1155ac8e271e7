"""Layout search, judged by the preflight's own rules and ranked by the memory estimate and the step-time model.

Also the plan a dry run prints.
"""
