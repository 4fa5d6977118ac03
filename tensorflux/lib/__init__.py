"""Support libraries that are not ops: file formats (`lib.io`), the encodings summaries
use (`histogram`, `png`, `wav`)."""
