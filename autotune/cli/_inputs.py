"""What the command line gives, read and checked: ``--config`` (JSON text or @file) and the
dashboard's address. Errors name the flag (a :class:`ConfigError`, exit code 2)."""

from __future__ import annotations

from pathlib import Path

from autotune.config import TrialConfig
from autotune.exceptions import ConfigError


def read_config(value: str) -> TrialConfig:
    """--config takes JSON text, or @path to a JSON file."""
    if value.startswith("@"):
        path = Path(value[1:])
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigError(
                f"--config file {str(path)!r} cannot be read: {error.strerror}"
            ) from error
        except UnicodeDecodeError as error:
            raise ConfigError(
                f"--config file {str(path)!r} is not UTF-8 text (byte "
                f"{error.object[error.start]:#04x} at offset {error.start})"
            ) from error
        return TrialConfig.from_json(text, source=f"--config file {str(path)!r}")
    return TrialConfig.from_json(value, source="--config")


def check_listen(host: str, port: int) -> None:
    """Raises ConfigError naming --host/--port when the address cannot be listened on."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        with socket.socket(infos[0][0], socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(infos[0][4])
    except OSError as error:  # the port is taken, or the address is not this machine's
        raise ConfigError(
            f"--host/--port: cannot listen on {host}:{port} ({error.strerror or error}). "
            f"Received: --host {host} --port {port}"
        ) from error


__all__ = ["check_listen", "read_config"]
