"""`mem team ...`: identity, policy, publishing, retracting and the registry log.

The commands' work is in :mod:`memmesh.cli._team_run`, imported when one of them runs: the
registry, the policy and the store are more than `mem` should load just to start.
"""

import argparse

from memmesh.cli import _team_cache, _team_groups, _team_members
from memmesh.cli._common import (
    Command,
    Handler,
    command_adder,
    command_group,
    hits,
    lazy,
    member_name,
    nonempty,
    port,
    positive_float,
    positive_int,
    url,
)
from memmesh.local.items import KINDS, MAX_K

__all__ = ["register"]


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add `mem team` and its subcommands to the `mem` parser."""
    sub = command_group(
        commands,
        "team",
        "Share deliberately with your team: joining, policy, publish, retract, log, members.",
        "mem team join memmesh-join:eyJ1cmwiOiJodHRwczovL3RlYW0taG9zdDo4NDAwIn0",
        description="Share deliberately with your team. Nothing leaves this laptop unless you "
        "publish it and team.yaml allows it.",
    )
    command = command_adder(sub)

    p = command(
        "init",
        _run("init"),
        "Create your identity key (never overwritten) and a team.yaml that shares nothing "
        "until you set a coordinator and share rules. Prints your member id.",
        "mem team init --name ada --team acme --coordinator http://team-host:8400",
        description="Create your identity key (never overwritten) and a team.yaml that shares "
        "nothing until you set a coordinator and share rules; works offline. Prints your "
        "member id. To join a team whose admin gave you a join code, use `mem team join "
        "CODE` instead: it does all of this and puts your key on the team's roster.",
    )
    p.add_argument(
        "--name",
        required=True,
        type=member_name,
        help="your name in the team, as the author of your items (letters, digits, '.', '-', '_')",
    )
    p.add_argument("--team", default="default", type=nonempty, help="the team's name")
    p.add_argument(
        "--coordinator", metavar="URL", type=_coordinator, help="the team host's coordinator URL"
    )
    p.add_argument(
        "--share",
        action="append",
        default=[],
        choices=KINDS,
        metavar="KIND",
        help="a kind of item team.yaml lets you publish (repeatable; default: none)",
    )

    p = command(
        "policy",
        _run("policy"),
        "Show the effective team policy, check team.yaml (exit 3 if invalid), or print its path.",
        "mem team policy check",
    )
    p.add_argument("action", nargs="?", choices=("show", "check", "path"), default="show")

    p = command(
        "publish",
        _run("publish"),
        "Publish items to the team, all or nothing; --eligible publishes every item the policy "
        "allows that was never published. The policy decides each item; --force overrides "
        "eligibility and your never rules (and is recorded), never a detected secret.",
        "mem team publish --eligible --dry-run",
        description="Publish items to the team, all or nothing. The policy decides each "
        "item; --force overrides eligibility and your never rules (and is recorded), never a "
        "detected secret. A retracted item is published again only with --again: teammates "
        "then see it anew, as its next version. --eligible publishes, in one step, every "
        "active item the policy allows that was never published (retracted ones are left "
        "out and listed); with --dry-run it lists them. --to publishes for some of the "
        "team only: groups and members of the signed roster (comma-separated or repeated), "
        "or 'everyone'. Without it, an item keeps the audience it was published for, else "
        "team.yaml's share.audiences decides, else it is for the whole team. The audience "
        "is signed into the publication: publishing for another makes a new version, and "
        "the coordinator and every peer serve it to nobody else. A name the roster lacks, "
        "or a roster that makes you a reader or leaves you out of the project's publishers, "
        "refuses the publish (exit 3). --dry-run names who could read each item.",
        json_shape='{"dry_run", "items": [{"id", "action", "version", "rule", "forced", '
        '"text", "audience", "readers"}]}, plus "left_out" (ids retracted before) with '
        '--eligible; "audience" is null for the whole team, "readers" the names of who may '
        "read it now",
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="item ids or unique prefixes")
    p.add_argument(
        "--eligible", action="store_true", help="every item the policy allows, never published"
    )
    p.add_argument("--force", action="store_true", help="override eligibility and never rules")
    p.add_argument(
        "--again", action="store_true", help="publish retracted items anew, as a new version"
    )
    p.add_argument("--dry-run", action="store_true", help="show what would leave, change nothing")
    p.add_argument(
        "--to",
        action="append",
        type=_team_groups.names,
        metavar="WHO",
        help="publish for these groups or members only (or 'everyone')",
    )

    p = command(
        "retract",
        _run("retract"),
        "Retract published items: they stop being served everywhere, and come back only if "
        "you publish them again with --again.",
        "mem team retract 01J9ZC4",
    )
    p.add_argument("ids", nargs="+", metavar="ID", help="item ids or unique prefixes")

    p = command(
        "status",
        _run("status"),
        "Your member id and public key; per project: private, eligible, published, withheld, "
        "blocked (by which rule); what awaits sync. With --check, also whether the coordinator "
        "answers and accepts you, and which teammates' peers answer.",
        "mem team status --check",
        description="Your member id and public key (joining with an invite code (mem team "
        "join CODE) puts it on the team's roster; an admin may also add it: mem team members "
        "add NAME KEY); per project: private, eligible, published, withheld, blocked (by which "
        "rule); what awaits sync, and how many published items the policy now withholds. "
        "Works offline: nothing is contacted unless you give --check, which asks the "
        "coordinator whether it accepts this member (exit 3 if it does not, saying why: no "
        "token set, a wrong token, a signature it refuses, a key outside the roster or "
        "revoked; exit 4 if it cannot be reached or shows another certificate than the "
        "pinned one) and asks each teammate's peer it lists whether it answers now.",
    )
    p.add_argument(
        "--check", action="store_true", help="contact the coordinator and the teammates' peers"
    )
    _timeout(p, 3.0)
    command(
        "sync",
        _run("sync"),
        "Push every registry entry the coordinator has not acknowledged, re-checking the "
        "policy first: published items it no longer allows are retracted, and stay so until "
        "published again. Safe to interrupt and run again.",
        "mem team sync",
    )
    _network_commands(command)
    _team_members.register(command)
    _team_groups.register(command)
    _team_cache.register(sub)
    command("log", _run("log"), "Show the registry log, oldest first.", "mem team log --json")
    command(
        "verify",
        _run("verify"),
        "Check the registry log's chain and signatures. Exits 1 on any problem.",
        "mem team verify",
    )


def _coordinator(value: str) -> str:
    """An argparse type: :func:`url`, saying which URL to write for one without its scheme."""
    try:
        return url(value)
    except argparse.ArgumentTypeError as exc:
        from memmesh.policy.config import suggested_url

        raise argparse.ArgumentTypeError(f"{exc}{suggested_url(value)}") from None


def _run(name: str) -> Handler:
    return lazy("memmesh.cli._team_run", f"run_{name}")


def _network_commands(command: Command) -> None:
    """Register serve, peers and recall-team through the team group's ``command`` helper."""
    p = command(
        "serve",
        lazy("memmesh.cli._team_net", "run_serve"),
        "Run this member's peer daemon: it answers teammates from your currently published "
        "items that still pass the policy, heartbeats to the coordinator and (with "
        "discovery) announces itself on the LAN. By default it listens on 127.0.0.1, which "
        "only this machine reaches: --host 0.0.0.0 makes it reachable by teammates on other "
        "machines (over https, telling them this machine's address; it warns at start when "
        "teammates cannot reach it). One home runs one peer daemon: a second is refused, "
        "naming the first. It stops, exiting 3, once the coordinator says this member's key "
        "was revoked. Refuses to start while team.yaml is invalid.",
        "mem team serve --host 0.0.0.0",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (127.0.0.1: this machine only; 0.0.0.0: every interface, "
        "so that teammates reach it)",
    )
    p.add_argument("--port", type=port, default=8410, help="port to listen on (8410)")
    p.add_argument(
        "--advertise",
        metavar="URL",
        type=url,
        help="URL teammates reach this daemon at (default: its own address and --port; with "
        "--host 0.0.0.0, this machine's address facing the coordinator)",
    )
    p.add_argument(
        "--interface",
        action="append",
        metavar="IP",
        help="interface address for zeroconf (repeatable; default: the listen address)",
    )
    p.add_argument(
        "--heartbeat", type=positive_float, default=30.0, help="seconds between heartbeats"
    )
    p.add_argument(
        "--tls",
        action="store_true",
        help="serve https on loopback too (beyond loopback it always does, with a certificate "
        "of its own whose pin travels in its signed presence)",
    )

    p = command(
        "peers",
        lazy("memmesh.cli._team_net", "run_peers"),
        "Show teammates' peer daemons whose presence holds: who, where, learned from where, "
        "which embedder, and how long ago it was last seen. With --check, ask each whether "
        "it answers now.",
        "mem team peers --check",
        description="Show teammates' peer daemons whose presence holds: who, where, learned "
        "from where, which embedder, and how long ago it was last seen (a presence holds for "
        "90 s after a heartbeat, so a daemon stopped since is listed until then). With "
        "--check, each is asked for its presence now, and listed as answering or not; the "
        "exit code stays 0 either way.",
    )
    p.add_argument("--interface", action="append", metavar="IP", help="zeroconf interface")
    p.add_argument("--check", action="store_true", help="ask each peer whether it answers")
    _timeout(p, 3.0)

    p = command(
        "feed",
        lazy("memmesh.cli._team_net", "run_feed"),
        "What teammates shared or took back, newest first, from the coordinator's feed: who "
        "published or retracted which item, and when.",
        "mem team feed --limit 50",
        description="What teammates shared or took back, newest first, from the "
        "coordinator's changes feed: each item once, at its latest change (published, with "
        "its text, or retracted), with its author's name on the roster. Every entry is "
        "verified first; one that does not verify is dropped and counted.",
        json_shape='{"entries": [{"action", "item_id", "version", "author", "key_id", "at", '
        '"standing", "text", "kind", "project"}], "dropped", "complete"}; "at" is ISO 8601 UTC',
    )
    p.add_argument(
        "--limit",
        type=_feed_limit,
        default=20,
        metavar="N",
        help="show the newest N changes (20; at most 500)",
    )

    p = command(
        "recall-team",
        lazy("memmesh.cli._team_net", "run_recall_team"),
        "Ask the whole team: the coordinator and every live peer at once. Answers are "
        "verified, attributed and ranked on one score; each source's outcome is reported, "
        "and the projects searched. Exits 4 only when no source answered.",
        'mem team recall-team "how do we run database migrations" -k 5\n'
        '  mem team recall-team "when are invoices sent" --all-projects --explain',
        description="Ask the whole team: the coordinator and every live peer at once. Answers "
        "are verified, attributed and ranked on one score; each source's outcome is reported. "
        "The search covers one project plus global: --project, else MEM_PROJECT, else the "
        "enclosing git repository's name (global alone outside one); every answer says which "
        "(`searched:`). --all-projects asks every project the sources hold (daemons older "
        "than it refuse it, each reported as failed). --explain adds, per answering source, "
        "each hit it returned and what became of it: kept (hit #N), or cut and why (does not "
        "verify, not on the roster, a duplicate, replaced by or withdrawn by its live author, "
        "not by --author, below the relevance gate or floor, far below the best, beyond -k). "
        "Exits 4 only when no source answered.",
        json_shape='{"query", "hits": [{"id", "text", "score", "author", "key_id", "source", '
        '"authors", "also", ...}], "abstained", "sources": [{"name", "status", "hits", '
        '...}], "dropped", "warnings", "scope": {"projects", "all_projects", '
        '"project_from", "author"}};\n  with --explain "explanation": {"k", "min_relevance", '
        '"min_share_of_best", "sources": [{"name", "returned": [{"id", "author", '
        '"source_score", "fate", "score", "rank", ...}]}]}',
    )
    p.add_argument("query", help="what you want to know")
    p.add_argument("-k", type=hits, default=5, metavar="N", help=f"at most N hits (1-{MAX_K})")
    p.add_argument("--author", metavar="NAME", type=member_name, help="only items by this member")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--project", metavar="P", help="project to ask about (plus global)")
    scope.add_argument(
        "--all-projects", action="store_true", help="ask about every project the team holds"
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="per source, each hit it returned and what became of it (kept, or cut and why)",
    )
    _timeout(p, 2.0, "per-source seconds")
    p.add_argument("--interface", action="append", metavar="IP", help="zeroconf interface")


def _feed_limit(value: str) -> int:
    """An argparse type: how many changes `mem team feed` shows, 1 to 500."""
    number = positive_int(value)
    if number > 500:
        raise argparse.ArgumentTypeError(f"must be at most 500, not {number}")
    return number


def _timeout(parser: argparse.ArgumentParser, seconds: float, what: str = "") -> None:
    """Give a command that contacts the team ``--timeout S`` (``seconds`` by default)."""
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=seconds,
        metavar="S",
        help=what or f"seconds each contacted daemon has to answer ({seconds:g})",
    )
