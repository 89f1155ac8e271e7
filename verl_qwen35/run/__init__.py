"""After the verdict: the job (plan, launch, submit), its environment and launch record.

Also relaunch, sweeps and the launch-time machine checks.
"""
