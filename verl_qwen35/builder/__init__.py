"""The builder of a `Run`: below the planner, above the checks, so both the job and every planner candidate
are built by the one function (`build_run`)."""
