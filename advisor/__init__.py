"""gpu-advisor: which accelerator to rent or buy for an ML workload, how many, and why."""
from pathlib import Path

__version__ = "0.1.0"


def _home() -> Path:
    """Where catalog/, rules/ and templates/ live: beside the package in a source checkout (and an
    editable install), inside it (advisor/_data/) in an installed wheel."""
    here = Path(__file__).resolve().parent
    packaged = here / "_data"
    if (packaged / "catalog" / "sources.yaml").is_file():
        return packaged
    return here.parent


#: The folder that holds catalog/, rules/ and templates/.
HOME = _home()
