"""The root of every error memmesh raises on purpose, and the ``mem`` command's exit codes.

Each subpackage has its own ``errors.py`` whose classes derive from :class:`MemmeshError`.
An error carries what the edges need: ``exit_code`` for the ``mem`` command, ``status`` for
the HTTP daemons, and ``code``, a short stable name that programs can rely on (the daemons
send it in every error body): the class's name in snake_case. Nothing below the edges prints
or exits.

Every error class, with its exit code, HTTP status and code (``tests/test_errors.py`` checks
that this tree is the real one):

    class                               exit  status  code
    MemmeshError                           1     500  error
    ├── AccessError (team)                 3     500  access_error
    │   ├── KeyRevoked                     3     500  key_revoked
    │   ├── NotOnRoster                    3     500  not_on_roster
    │   ├── RosterNotTrusted               3     500  roster_not_trusted
    │   ├── SignatureRejected              3     500  signature_rejected
    │   ├── TokenMissing                   3     500  token_missing
    │   └── TokenRejected                  3     500  token_rejected
    ├── AgentError (agents)                1     500  agent_error
    │   ├── ConfigFileError                1     500  config_file_error
    │   ├── McpUnavailable                 1     500  mcp_unavailable
    │   ├── NotesUnreadable                1     500  notes_unreadable
    │   ├── ReadOnly                       1     500  read_only
    │   └── TranscriptUnreadable           1     500  transcript_unreadable
    ├── CliError (cli)                     1     500  cli_error
    │   ├── DemoFailed                     1     500  demo_failed
    │   ├── NotConfirmed                   1     500  not_confirmed
    │   ├── TeamRefused                    3     500  team_refused
    │   └── UsageError                     2     500  usage_error
    ├── CoordinatorError (coordinator)     1     500  coordinator_error
    │   ├── AlreadyAdmin                   1     409  already_admin
    │   ├── BadJoinCode                    2     400  bad_join_code
    │   ├── BadMemberName                  2     400  bad_member_name
    │   ├── LastAdmin                      1     409  last_admin
    │   ├── MemberRevoked                  1     409  member_revoked
    │   ├── NoAdminToDemote                1     409  no_admin_to_demote
    │   ├── NoSuchMember                   1     404  no_such_member
    │   ├── NotAnAdmin                     3     403  not_an_admin
    │   ├── QuotaExceeded                  1     413  quota_exceeded
    │   ├── RosterRefused                  3     400  roster_refused
    │   ├── RosterSigned                   1     409  roster_signed
    │   └── StaleRosterHead                1     409  stale_roster_head
    ├── EmbedError (embed)                 1     500  embed_error
    │   ├── EmbedderDamaged                1     500  embedder_damaged
    │   ├── EmbedderUnavailable            1     500  embedder_unavailable
    │   └── UnknownEmbedder                2     500  unknown_embedder
    ├── NetError (net)                     1     500  net_error
    │   ├── BadRequest                     1     400  bad_request
    │   ├── BadResponse                    1     500  bad_response
    │   ├── BadUrl                         1     400  bad_url
    │   ├── BodyTooLarge                   1     413  body_too_large
    │   ├── CannotListen                   1     500  cannot_listen
    │   ├── CertificateUnusable            1     500  certificate_unusable
    │   ├── Conflict                       1     409  conflict
    │   ├── Forbidden                      1     403  forbidden
    │   │   └── Revoked                    1     403  revoked
    │   ├── InsecureBind                   1     500  insecure_bind
    │   ├── InsecureUrl                    3     500  insecure_url
    │   ├── NotFound                       1     404  not_found
    │   ├── Overloaded                     1     503  overloaded
    │   ├── Refused                        1     500  refused
    │   ├── RequestTimeout                 1     408  request_timeout
    │   ├── Unauthorized                   1     401  unauthorized
    │   │   └── WrongAudience              1     401  wrong_audience
    │   │       └── OutdatedAudience       1     401  outdated_audience
    │   ├── Unavailable                    1     503  unavailable
    │   ├── Unreachable                    4     500  unreachable
    │   │   ├── PinMismatch                4     500  pin_mismatch
    │   │   └── Timeout                    4     500  timeout
    │   └── WorkerDied                     1     500  worker_died
    ├── PageError (web)                    1     500  page_error
    │   ├── BadForm                        1     400  bad_form
    │   └── PageRefused                    1     403  page_refused
    ├── PolicyError (policy)               3     403  policy_error
    │   ├── NoCoordinator                  3     403  no_coordinator
    │   ├── PolicyFileError                1     500  policy_file_error
    │   ├── PolicyInvalid                  3     403  policy_invalid
    │   ├── PolicyMissing                  3     403  policy_missing
    │   ├── PolicyNotEditable              3     403  policy_not_editable
    │   └── PublishRefused                 3     403  publish_refused
    ├── RegistryError (registry)           1     500  registry_error
    │   ├── BadSignature                   1     400  bad_signature
    │   ├── IdentityExists                 1     500  identity_exists
    │   ├── IdentityInvalid                1     500  identity_invalid
    │   ├── IdentityMissing                1     500  identity_missing
    │   ├── IdentityNotCreated             1     500  identity_not_created
    │   ├── IdentityUnreadable             1     500  identity_unreadable
    │   ├── LogTailMismatch                1     500  log_tail_mismatch
    │   ├── NotPublished                   1     404  not_published
    │   ├── NotYourItem                    1     403  not_your_item
    │   ├── PublishNotAllowed              3     403  publish_not_allowed
    │   ├── RetractedBefore                2     409  retracted_before
    │   ├── RosterChainBroken              1     500  roster_chain_broken
    │   └── UnknownAudience                3     400  unknown_audience
    ├── ServiceError (service)             1     500  service_error
    │   ├── NoServiceManager               1     500  no_service_manager
    │   ├── NoTeam                         3     500  no_team
    │   └── ServiceFileError               1     500  service_file_error
    └── StoreError (local)                 1     500  store_error
        ├── AmbiguousId                    2     400  ambiguous_id
        ├── BadExport                      2     400  bad_export
        ├── CandidateNotFound              1     404  candidate_not_found
        ├── CorruptDatabase                1     500  corrupt_database
        ├── DamagedVector                  1     500  damaged_vector
        ├── DatabaseUnavailable            4     503  database_unavailable
        ├── EmbedderMismatch               1     500  embedder_mismatch
        ├── ForeignDatabase                1     500  foreign_database
        ├── HomeNotCreated                 1     500  home_not_created
        ├── InboxFull                      1     507  inbox_full
        ├── InvalidInput                   2     400  invalid_input
        ├── ItemNotFound                   1     404  item_not_found
        ├── NotActive                      1     409  not_active
        ├── NotPending                     1     409  not_pending
        ├── NotRestorable                  1     409  not_restorable
        ├── RestoreRefused                 1     409  restore_refused
        ├── SchemaTooNew                   1     500  schema_too_new
        ├── StoreFull                      1     507  store_full
        ├── StoreLocked                    1     500  store_locked
        └── TraceNotFound                  1     404  trace_not_found
"""

import re
from enum import IntEnum

__all__ = ["ExitCode", "MemmeshError"]


class ExitCode(IntEnum):
    """What the ``mem`` command's exit status means."""

    OK = 0
    ERROR = 1
    USAGE = 2
    REFUSED = 3  # by the team policy
    UNREACHABLE = 4  # no source answered
    INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT
    CLOSED_PIPE = 141  # the reader went away (`mem list | head`), as shells report SIGPIPE


class MemmeshError(Exception):
    """Base of all memmesh errors; ``str(error)`` is one sentence fit for a user."""

    exit_code: ExitCode = ExitCode.ERROR
    status: int = 500
    # Each subclass's code is its name in snake_case (``ItemNotFound`` -> ``item_not_found``):
    # renaming an error class changes what programs see, like any change to the protocol.
    code: str = "error"

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "code" not in cls.__dict__:
            cls.code = _snake_case(cls.__name__)

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


def _snake_case(name: str) -> str:
    """``ItemNotFound`` as ``item_not_found``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
