"""What retrace concludes about one trial: the one declaration every layer reads (the
projection, its receipt, the views, the command line). Stdlib only, so ``vledger retrace``
renders statuses without loading a schema library."""

from enum import StrEnum


class RetraceStatus(StrEnum):
    """A trial's retrace status; the declaration order is the receipt's count order."""

    AGREED = "agreed"
    DISAGREED = "disagreed"
    UNGRADED = "ungraded"  # re-checked, but nothing recorded to compare the replay with
    NOT_RECHECKED = "not_rechecked"  # the trial could not be re-derived (the reason says why)
