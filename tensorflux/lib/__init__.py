"""Support libraries that are not ops: file formats (`lib.io`)."""
