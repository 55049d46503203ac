"""The curator: decides which verified trajectories may train the next model, and which need a human.

Recovery demonstrations are admitted without a human: a verified success that met a permission or
confirmation gate (``permission_denied``, ``needs_confirmation``) and recovered is admitted when it ran on an
exact backend, finished, took no destructive action, and its task's no-collateral criterion passed. A task
says otherwise by carrying no no-collateral criterion (nothing then shows the recovery was harmless): such
episodes, destructive actions, and simulated or device episodes are quarantined for review
(``checks.recovery_demonstration``, ``checks.review_reasons``).
"""
