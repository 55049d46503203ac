"""The simulated user: who answers a policy's clarifying questions in user-in-the-loop tasks."""

from harness_service.user.simulator import PolicyUser, ScriptedUser, UserSimulator, user_for

__all__ = ["PolicyUser", "ScriptedUser", "UserSimulator", "user_for"]
