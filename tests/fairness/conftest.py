"""The cue-audit tests: constructed dialogues (cue_signals) and tiny rendered work directories."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # cue_signals: constructed dialogues
