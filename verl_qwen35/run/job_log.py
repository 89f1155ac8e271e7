"""The job's log file (`<output dir>/<job name>.log`), appended to without following a link.

Hydra's default `hydra/job_logging` opens the file with `logging.FileHandler` (a plain `open(..., "a")`), which
writes through a link planted at that name in a reused run or sweep job directory. conf/hydra/job_logging/
verl_qwen35.yaml is Hydra's default with this handler in its place: logging's own dictConfig `class` key, no
patch of Hydra or logging.
"""

import logging
import os

from verl_qwen35.disk import open_append


class NoFollowFileHandler(logging.StreamHandler):
    """logging.FileHandler's job (append, UTF-8), opened by disk.open_append: a link or a FIFO there is an OSError
    (logging's dictConfig names the handler), never a write elsewhere or a wait."""

    def __init__(self, filename: str, encoding: str = "utf-8") -> None:
        self.baseFilename = os.path.abspath(filename)
        super().__init__(os.fdopen(open_append(filename), "a", encoding=encoding, errors="backslashreplace"))

    def close(self) -> None:
        try:
            self.acquire()
            try:
                if self.stream is not None:
                    self.flush()
                    self.stream.close()
                    self.stream = None
            finally:
                self.release()
        finally:
            super().close()
