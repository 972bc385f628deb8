"""What both engines share: policy, planners, how a task runs, the run directory's files."""
