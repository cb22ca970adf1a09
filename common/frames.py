"""pandas as Concord uses it: `from common.frames import pd` in place of `import pandas as pd`.

pandas 3 keeps a column of strings in pyarrow arrays where pyarrow is installed. Concord's frames are small (a pool's
items, a job's instances: thousands of rows), and on them every operation pays for converting to and from pyarrow:
with the strings kept as Python objects (the same `str` dtype, the same missing value) reports and crowd-kit's
fits are built faster (benchmarks/README.md, "Caches on the paths people drive").
The option is global to the process, so every module that makes frames imports pandas through here, before it makes
one (tests/test_architecture.py holds them to it).
"""

from __future__ import annotations

import pandas as pd

pd.set_option("mode.string_storage", "python")

__all__ = ["pd"]
