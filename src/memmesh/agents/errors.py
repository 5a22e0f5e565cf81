"""Errors of the agent integrations.

MemmeshError
└── AgentError                  exit 1
    ├── McpUnavailable          the optional MCP SDK is not installed
    ├── ConfigFileError         a client's configuration file cannot be read or safely edited
    ├── NotesUnreadable         a notes file cannot be read as notes (missing, binary, malformed)
    ├── ReadOnly                a read-only MCP server (`mem mcp --read-only`) refused a change
    └── TranscriptUnreadable    an agent's transcript cannot be read (missing, not JSON lines)
"""

from memmesh.errors import ExitCode, MemmeshError

__all__ = [
    "AgentError",
    "ConfigFileError",
    "McpUnavailable",
    "NotesUnreadable",
    "ReadOnly",
    "TranscriptUnreadable",
]


class AgentError(MemmeshError):
    """Something between memmesh and a coding agent went wrong."""

    exit_code = ExitCode.ERROR


class McpUnavailable(AgentError):
    """`mem mcp` needs the MCP SDK, which is an optional extra."""

    def __init__(self, consequence: str = "") -> None:
        message = "the MCP server needs the optional MCP SDK: pip install 'memmesh[mcp]'"
        super().__init__(message + (f"; {consequence}" if consequence else ""))


class ConfigFileError(AgentError):
    """A client's configuration file is unreadable or not what we can edit without harm.

    Nothing is written when this is raised.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}; nothing was changed")
        self.path = path
        self.problem = problem


class NotesUnreadable(AgentError):
    """A notes file proposed to the inbox cannot be read as notes; nothing of it was added."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}; nothing of it was added to the inbox")
        self.path = path
        self.problem = problem


class ReadOnly(AgentError):
    """A tool that would change the store or the team was called on a read-only server."""

    def __init__(self, tool: str) -> None:
        super().__init__(
            f"{tool} is not allowed: this memory server is read-only (mem mcp --read-only); "
            "it can recall and explain, never change anything"
        )
        self.tool = tool


class TranscriptUnreadable(AgentError):
    """A coding agent's transcript cannot be read; nothing of it was added to the inbox."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}; nothing of it was added to the inbox")
        self.path = path
        self.problem = problem
