"""The main job: N rounds of the closed loop, run by the consumers in-process or as their own processes, watched from
the log."""
