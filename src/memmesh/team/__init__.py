"""Team operations: the member at work, sync with the coordinator, recall across the team.

Submodules are imported where they are used (``memmesh.team.sync``, ``memmesh.team.recall``):
sync and recall need the HTTP client, which commands that do not talk to the team should not
pay for at start-up.
"""
