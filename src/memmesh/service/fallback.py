"""What to run instead where there is no service manager: a daemon started in the
background with its output in the home's logs folder, or a crontab line for a schedule."""

import shlex

from memmesh.service.units import Schedule, ServiceSpec

__all__ = ["instead"]

# Minute, hour, day of month, month, day of week: the times systemd's hourly, daily, weekly name.
_CRON: dict[Schedule, str] = {"hourly": "0 * * * *", "daily": "0 0 * * *", "weekly": "0 0 * * 1"}


def instead(spec: ServiceSpec) -> tuple[str, str]:
    """How to do ``spec``'s work without a service manager: what to do with it, and the
    command (a shell line for a daemon, a crontab line for a schedule)."""
    log = spec.id.log_file
    logs = f"mkdir -p {shlex.quote(str(log.parent))}"
    output = f">> {shlex.quote(str(log))} 2>&1"
    if spec.schedule is None:
        started = f"{logs} && nohup {shlex.join(spec.argv)} {output} &"
        return (
            "start it yourself instead (it is not started again after a crash or a login)",
            started,
        )
    # cron reads a bare % as the end of the command.
    command = f"{logs} && {shlex.join(spec.argv)} {output}".replace("%", "\\%")
    return (
        "add this line to your crontab (`crontab -e`) instead",
        f"{_CRON[spec.schedule]} {command}",
    )
