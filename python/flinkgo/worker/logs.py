"""JSON log lines on stderr in the shape go-plugin's hclog parser expects."""

import datetime
import json
import logging
import sys


class HclogFormatter(logging.Formatter):
    """Formats a record as one hclog JSON line (@level, @message, @timestamp)."""

    _LEVELS = {
        logging.DEBUG: "debug",
        logging.INFO: "info",
        logging.WARNING: "warn",
        logging.ERROR: "error",
        logging.CRITICAL: "error",
    }

    def format(self, record: logging.LogRecord) -> str:
        """Return ``record`` as one JSON line."""
        now = datetime.datetime.fromtimestamp(record.created, tz=datetime.timezone.utc)
        entry = {
            "@level": self._LEVELS.get(record.levelno, "info"),
            "@message": record.getMessage(),
            "@timestamp": now.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z",
            "@module": record.name,
        }
        if record.exc_info:
            entry["traceback"] = self.formatException(record.exc_info)
        entry.update(getattr(record, "fields", {}))
        return json.dumps(entry, default=str)


def setup(level: str) -> logging.Logger:
    """Route the ``flinkgo`` loggers to stderr as hclog JSON lines."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(HclogFormatter())
    root = logging.getLogger("flinkgo")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
    return logging.getLogger("flinkgo.worker")
