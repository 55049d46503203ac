"""The round controller: opens rounds, schedules rollouts, triggers training and dev evaluation, closes rounds."""
