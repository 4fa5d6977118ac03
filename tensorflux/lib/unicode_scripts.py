"""The ICU script code (UScriptCode, as tf.strings.unicode_script returns) of
every Unicode code point, stored as runs: code points from STARTS[i] up to STARTS[i + 1]
have script CODES[i]. Generated from TensorFlow's UnicodeScript op (ICU data) by
scripts/gen_unicode_scripts.py; do not edit by hand.
"""

from __future__ import annotations

import base64
import zlib

import numpy as np

__all__ = ["script_of"]

_RUNS = (
    "eNq9WltvXFcVnnOZi2fGM7bHtxknvsSO3aYxjtO4zpBLkwAJyFVzaSCktSok2g4kpQ3UVIWqpSpqjUUCBRRaLC69"
    "mFyKRAqBlCbBBFTEL6DiqQ8888AT8ILE2ZpvaT5/OpMJKsLS1vg7e++111577XU7J5Go/+2NWjlqFeCU4ClgD7go"
    "OAncB+wBDwn+PSZMACdpvms+cDfmnIpaIWoh0XE4iFoN4+P6PfSHhLU/jp7ON9wt+O6opfG/ax1Ry0TtBYzxgS/S"
    "PLfGOPHt8FbBzEcparPAGeAB2lcJ5+RwDjSStC8f/YwLgnmfvsjF4WHBWfxv61WArf9RGb8BrUDrOLyT9r0B+3b/"
    "b4naRpKLm3csajto/DGMfzZqH6Lnz0IvbZ2jUVtH/UdlvxuwD4dnMKZH5NEl8i3K/tZDJofxLAS2cSazCvpCoh/i"
    "XI2/EL+Me2V8WrDtJxD6Nr+tBf2Q9CuUe8Pjbb2kzC8T7hD97SD9DIF9Gd8r49OC/VvERs+T/mSL9QOSH89PA4dC"
    "T/s7ge3Mef9Fkr/XpL9XcFqwL5jlX8S6N6MfyHjjv4gWSn+e9qf8DAn9IdHfIZHvkOxvKIaeLzgp89ta0A+IX8bh"
    "LdLvovMblfGjpL8BcCD9ofTrfE+w32S80jecp/2MEv+t+PFl/ZTgArDZO0d3LGrtRG9M6I/BvzPuIH7GSB+azQ/p"
    "vMZEXjw+KeN94KzMb8MemO8eWbdH+O6Re9MjetEj9zaOHu+jh/Zh2Gsy3m+yvs1vh6/g/VRkfYfvbNHPdrdC52Q+"
    "u0LjR2T+CN2LALhf+tsEe0R/hO55IP0hcKrJfMMZ0tsRkpcv/OYRU32Y6Jt/Hif/vxF7YH3rl3X7SQ8M97cY30d8"
    "xc3X8SkZnxVsejKMGPnjNH8COm/7nECL6zdcFJyGfGy+T/JxsnqVZGrz8rSPpGAf+A6Sex70u/DAxU6fIHo5uQ85"
    "8Qs5kVvc+Ntb9I/8j9crSn+1xfiPCB6m+5Cj+5dC+xSNT4me3Ba15/x6rLme6Diac5C74RzZoU1iRzbRvnM4sx6K"
    "U2u415sp33FnOSl0JsVeTNL8PO7Eg8R/H+l5KgYPUN7nA3MeMiD2ZiBm/nHa9wD2Zvrq5Lef/PwW+H6jt0X8bBzm"
    "ONv6t0VtkPa5je5/DjnLZqKzQ859B51XAGzyGkbux/nLLH5PIP80/k+QXlh/jtY5IfI6QfmY5XwWxzq6u6N2D/G9"
    "G2dsfH4xanswdhvlD3dj/JGobafxR+j+GHa/X4AsM3S+abInbF9s3QytZzl1gnLQdsFs7zzSq5TggHK6hNi7Muxh"
    "AThD9Yxpel6meoPhdhm/n+oLHvktwzbPgQLFz5a7pwSPt+jPtKhrtMJDQm9G+ouCC034sf6S9Gvdhe95gnyNncsx"
    "6c9RHapG43Ix9aoanUM76WOC7HMHxSA1yuPHpW4UgI4v9TLrHxDcCXw7zed45WW/jsvEf43s86tBvdZhBBf8tfsd"
    "Frl8Hndwip4rLmOeuyMLpO9puof/TRywk+59GtinfGMn+cs+8jdx/vj/iTNU57oPzydxZhwnd5KfyQO/B1whfeVz"
    "TWIc+zPGZeA2qrF00blm0B+SHTN+uiVu8MSPdot9dLbkfurvlXwrSXbXAx8Pil5ZTcXkNUby6EV/l/jXBPxFF9WD"
    "D2P8lPD3aeAL2PeNcmO+w/8+3Li37i6dCdfiWdKrr8O/fNb5Ya/+vBsy/UzUnsd65k8SqAm6JR+Rez5Dci6TndoE"
    "nIMtnxS7wn73frofbr3HKS4xnKfxWcj5IOqcJqeD+H2M5J8DtnPjOPFetJro4b3EXwjsI+bg89snct0ndn6f5DH7"
    "QG8d+P8axcP9wE6HniA7kMUeUhI3N8O3YjfKkpfYuRUIhxL/hljjEPjj+vITcp5Ozit3NPS/i/Zj93ja8Ehdfx/z"
    "GvQ6EYvVYGfLxL/FPEm6nyWxRyXJN0viv0uS78bhLJ59Cc87gU96a+VitdM9JA/X7gK+jXw626OOmHvgUWxi9mpU"
    "9LMkOCS5+rJvhxfF/3syf7jF+60c7E9W7NEk6QfbtQCY9fNWcCD2IS18puk+JKQuNU32wQOuCC4J9gUXhZ6d1wbg"
    "p0nf4uIUtW92nw7KPji+4rhyiuh49NzZ4pNitz5H96co8Tq/BxskO9gGHICHAdrPcckLZyh/84Dd7y6ps+wiOW3C"
    "GodQg9uCd1WcB24Vff+Z0FP8Ddwf8wM/obwqB2xyegkxyqzX2O99lCdkgS3ufwUyZz2ckvsxRXmqYa5LT0mcZ3hB"
    "6vsL4Ocl3Ldv033JAJvfdHJ7XfT1dVo3Cex+H6A8OAD28K6xQuMfJT73IDZyfJyhOl4I3E37OQM7X5X4qir8VCWf"
    "qkr+UpU8vCr3pyr166rkvS+A329RPO9+v0J1vhA4T/r+ZbLDAbCj94zkj8+A/6+S3JPAGdz9LuLnaZJHHtjs0yHE"
    "TlbXm0XN4E6qYzNOAzs9vCL6foXkMu413s2YXG/g3jHm91o36JxcDPMbof82zXc68VvSJ6cH70g+spfipRB4kOzQ"
    "XvDxFGIdu6dPyT15hd6PpoHZLjwp+fSTJP8MarETxNfLiFu5Tt5N6/+I5nvAdq8dzyvib1bEDqyI/q9I3rwidaXv"
    "0Hv5JDDvb0noLcn7wiV5n7ck9mRJ+F0Sf7YkcYBHz9tarBMI9oRvznOZD19wIHx8M2pvRm2e+HqT+p0e/Zjq+hlg"
    "k9s5tLtovXOUhzs//UbUPkbn/kZMPdT8r7vnP6B6dRrYxrt1XiM/6QMXSf9fo/dH7q79kr7feChq36W8OQ/s9r0q"
    "cluV+7Eq9nRVzndV/POqnOOq2MFV2pfLq66Jvl2TeP4a6bPb/y/kXN6ifTm7/lOWo1fPUbledYHiI8MF8ssXJL65"
    "SHbeB2b9v0jznZ29JPfhksjrEt33ANhrMb6N9ntJ9Oiy1O8uy/zLeG90s/4U6d1l1rtowK/IPr6NfJ2/Txil74Da"
    "6f31w1FbDurPHwF+nNZ9WOrwDr8LfD1i4ICLYcLG+AMkhz9FC//QPUN97Z2Remxa9Rv7OCv+6azk0WdJDs5evyjx"
    "4Ysklyze4ewXzO+H5+Tc5+S9/Rz587eiBX6NGKmGvc9jjPE3L/Zgnur/Lm5axjrfp3jb8f07Op8c5YpW33Pz/tXX"
    "0KdlJBBu3nteI35eJnn/c0Nd562eNYhx01S/sry0V75XcvydxviwrZ4DniS5LEoesijx1qLULRZj6mzzpTr+h+Rl"
    "E5Jv7pb3EZ1UW0xQPmzvIwap3pcgP9oHWZo+LNP3kGZfuQ7eRnXEGvbg/j4p+dgBwX6TfNlv0h/G1OW1nhSXx3r0"
    "fWlcPs91zpvNX9dkvid5svLTLM8+6q1df0zwVnx7etpv2KNTss4p8pOHkvXaXlrq7Z20z7h+X7DR/3PUrkq+fVXq"
    "K1fF7lwleqcigtfp/ZKje53k4h6cjn7+SPROk593tdTz8h7wvKx3ntbrhKA/CnwP5LgL+A/0zSDXbQYE+zHfo3K9"
    "Sb9XzQoOm8xXnBIcthjfDAcfkP8Pilutp/JIt5BXK/mpvDtJv+LkkWwyfpvwX8DF3Cz1pofE7hXFbhTlXiveKHb7"
    "58DbgSv0rXlCvsOK44f9R0L8X4L8utntvwRr3y/oe0fFC7Lf47JenvLWuPdN2+V9BsdzCcmLExKXJCSPTqDWwPI8"
    "InhR+C0IvaTsL5D6YrqJH0s36Q/kfNJkr9zf94S/Wfq+aY08wrouvn+ukVc5PNOxNr55P7G2Xv98b+O8HZ5eX8dD"
    "+ToehL/4a7KO50p1fOVv2TV+aRD8WD7/HPr+Dvwf94Q0lQ=="

)


def _load():
    raw = np.frombuffer(zlib.decompress(base64.b64decode("".join(_RUNS))), "<i4")
    starts = np.cumsum(raw[0::2]).astype(np.int64)  # stored as deltas
    return starts, raw[1::2].astype(np.int32)


STARTS, CODES = _load()
MAX_CODE_POINT = 0x10FFFF


def script_of(code_points) -> np.ndarray:
    """The script code of each code point (int32, same shape); -1 outside [0, 0x10FFFF]."""
    cp = np.asarray(code_points, np.int64)
    out = CODES[np.clip(np.searchsorted(STARTS, cp, side="right") - 1, 0, None)]
    return np.where((cp < 0) | (cp > MAX_CODE_POINT), -1, out).astype(np.int32)
