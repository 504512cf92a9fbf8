"""``python -m bytewright explain``: see where every field of a message sits in the bytes.

    python -m bytewright explain MODULE:CLASS FILE [--offset N] [--view tree|hex]
    python -m bytewright explain --format pcap FILE [--html out.html]

Exit status: 0 when the data decodes, 1 when it does not (the failure is shown in red at
its offset), 2 for a usage error.
"""

import sys

from bytewright._explain._cli import main, run

if __name__ == "__main__":
    sys.exit(run(main))
