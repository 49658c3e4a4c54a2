"""Build hook: the UI assets are fetched (pinned, integrity-checked) before the packages are
copied, so every wheel carries them; a no-op without network when they are in place."""

import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithUiAssets(build_py):
    def run(self) -> None:
        fetcher = Path(__file__).resolve().parent / "scripts" / "fetch_ui_assets.py"
        subprocess.run([sys.executable, str(fetcher)], check=True)  # noqa: S603 (our own script)
        super().run()


setup(cmdclass={"build_py": BuildWithUiAssets})
