"""gpu-advisor: which accelerator to rent or buy for an ML workload, how many, and why."""
from pathlib import Path

__version__ = "0.1.0"

#: The project root: catalog/, rules/ and templates/ live beside the package.
HOME = Path(__file__).resolve().parent.parent
