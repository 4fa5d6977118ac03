"""LMDB data files, read only and in pure Python: the (key, value) records of a database's
main B+tree in key order, as an LMDB cursor walking it with MDB_NEXT gives them (what
`tf.LMDBReader` reads).

The layout (LMDB's `mdb.c`, 64-bit little-endian builds, data format version 1):

- The file is an array of pages of one size (the OS page size at creation, 4096 here),
  page n at offset n * page_size. Every page starts with a 16-byte header: uint64 page
  number, uint16 pad, uint16 flags (BRANCH 0x01, LEAF 0x02, OVERFLOW 0x04, META 0x08,
  LEAF2 0x20, SUBP 0x40), then uint16 lower and uint16 upper bounds of the free space
  (for an overflow page the two make a uint32 count of pages instead).
- Pages 0 and 1 are meta pages; the live one is the valid one with the larger txnid. After
  the header: uint32 magic 0xBEEFC0DE, uint32 version (1), uint64 map address, uint64 map
  size, two database records (the free list's, then the main database's), uint64 last
  page, uint64 txnid. A database record is 48 bytes: uint32 pad (the free list's holds the
  page size; a LEAF2 tree's its key size), uint16 flags (DUPSORT 0x04), uint16 depth, four
  uint64 page and entry counts, uint64 root page (all ones: an empty tree).
- A branch or leaf page holds its nodes' offsets (uint16, from the page's start) in key
  order right after the header: (lower - 16) / 2 of them. A node is uint16 lo, uint16 hi,
  uint16 flags, uint16 key size, the key, then its data. In a branch node lo | hi << 16 |
  flags << 32 is the child page (the first key is empty: everything below the second);
  in a leaf node lo | hi << 16 is the data size and flags say where the data is:
  BIGDATA 0x01 (the data holds the uint64 number of the overflow pages where the value
  starts, after their header), SUBDATA 0x02 (a database record), DUPDATA 0x04 (the key's
  sorted duplicate values: a sub-page, a leaf page embedded in the data, or with SUBDATA a
  database record of a tree whose keys are the values).
- A LEAF2 page (duplicates of one fixed size) holds the keys back to back after the header.

Every offset is checked against the file: a damaged or foreign file raises DataLossError.
"""

from __future__ import annotations

import mmap
import os
import struct

from tensorflux.framework import errors

__all__ = ["LMDBFile"]

MAGIC = 0xBEEFC0DE
DATA_VERSION = 1
HEADER = 16  # page header bytes
NODE = 8  # node header bytes
DB_RECORD = 48
P_BRANCH, P_LEAF, P_OVERFLOW, P_META, P_LEAF2 = 0x01, 0x02, 0x04, 0x08, 0x20
F_BIGDATA, F_SUBDATA, F_DUPDATA = 0x01, 0x02, 0x04
INVALID_PAGE = (1 << 64) - 1
_MAX_DEPTH = 64  # a deeper tree is a damaged one (LMDB's cursors stop at 32 levels)

_page_header = struct.Struct("<QHHHH")
_node_header = struct.Struct("<HHHH")
_db_record = struct.Struct("<IHHQQQQQ")
_meta = struct.Struct("<IIQQ")


class LMDBFile:
    """One LMDB data file (`data.mdb`), mapped read-only.

    Args:
      path: the data file's path (str or bytes), or an environment's directory (its
        `data.mdb` is read, as LMDB opens a directory).

    Raises:
      NotFoundError: no such file. DataLossError: not an LMDB data file, or one of
      another format.
    """

    def __init__(self, path):
        self.path = os.fsdecode(path)
        if os.path.isdir(self.path):
            self.path = os.path.join(self.path, "data.mdb")
        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                self._buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size \
                    else b""
        except FileNotFoundError:
            raise errors.NotFoundError(None, None, f"{self.path}; No such file or "
                                       "directory") from None
        self._view = memoryview(self._buf)
        self.page_size, self.txnid, self._main = self._live_meta()

    def close(self) -> None:
        self._view.release()
        if isinstance(self._buf, mmap.mmap):
            self._buf.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- meta pages ----------------------------------------------------------------------
    def _corrupt(self, what: str) -> errors.DataLossError:
        return errors.DataLossError(None, None, f"{self.path}: not a valid LMDB data file "
                                    f"({what})")

    def _read_meta(self, offset: int):
        """(page size, txnid, main database record) of the meta page at `offset`, or None
        if it is not a valid one."""
        end = offset + HEADER + _meta.size + 2 * DB_RECORD + 16
        if end > len(self._buf):
            return None
        flags = _page_header.unpack_from(self._buf, offset)[2]
        magic, version, _, _ = _meta.unpack_from(self._buf, offset + HEADER)
        if not flags & P_META or magic != MAGIC or version != DATA_VERSION:
            return None
        dbs = offset + HEADER + _meta.size
        free = _db_record.unpack_from(self._buf, dbs)
        main = _db_record.unpack_from(self._buf, dbs + DB_RECORD)
        txnid = struct.unpack_from("<Q", self._buf, dbs + 2 * DB_RECORD + 8)[0]
        return free[0], txnid, main

    def _live_meta(self):
        first = self._read_meta(0)
        if first is None:
            magic = struct.unpack_from("<I", self._buf, HEADER)[0] \
                if len(self._buf) >= HEADER + 4 else None
            raise self._corrupt("no meta page" if magic != MAGIC else
                                "a format other than 64-bit version 1")
        page_size = first[0]
        if page_size < 512 or page_size & (page_size - 1):
            raise self._corrupt(f"page size {page_size}")
        second = self._read_meta(page_size)
        metas = [m for m in (first, second) if m is not None and m[0] == page_size]
        _, txnid, main = max(metas, key=lambda m: m[1])
        return page_size, txnid, main

    # ---- records -------------------------------------------------------------------------
    def __iter__(self):
        """The (key, value) records of the main database in key order (bytes each);
        duplicates of a DUPSORT key follow each other in their order."""
        return self._tree(self._main[7], self._main[0])

    def __len__(self) -> int:
        return self._main[6]

    def database(self, name: bytes):
        """The records of the named database `name` (mdb_dbi_open with a name: its record
        is the main database's value under `name`), in key order.

        Raises:
          NotFoundError: the main database has no such record.
        """
        for key, value in self:
            if key == name and len(value) == DB_RECORD:
                record = _db_record.unpack(value)
                return self._tree(record[7], record[0])
        raise errors.NotFoundError(None, None, f"{self.path}: no database named {name!r}")

    def _page(self, pgno: int) -> tuple[int, int, int]:
        """(offset, flags, number of keys) of page `pgno`."""
        offset = pgno * self.page_size
        if pgno < 2 or offset + self.page_size > len(self._buf):
            raise self._corrupt(f"page {pgno} outside the file")
        _, pad, flags, lower, _ = _page_header.unpack_from(self._buf, offset)
        return offset, flags, self._count(offset, lower, self.page_size)

    def _count(self, offset: int, lower: int, size: int) -> int:
        if lower < HEADER or lower > size or lower % 2:
            raise self._corrupt(f"page at offset {offset} has free space from {lower}")
        return (lower - HEADER) // 2

    def _tree(self, root: int, key_size: int, depth: int = 0):
        """The records of the tree at page `root` (INVALID_PAGE: empty); `key_size`: the
        key size of its LEAF2 pages."""
        if root == INVALID_PAGE:
            return
        if depth > _MAX_DEPTH:
            raise self._corrupt("a tree deeper than any LMDB writes")
        offset, flags, n = self._page(root)
        if flags & P_BRANCH:
            for i in range(n):
                node = self._node_offset(offset, i, self.page_size)
                lo, hi, fl, _ = _node_header.unpack_from(self._buf, node)
                yield from self._tree(lo | hi << 16 | fl << 32, key_size, depth + 1)
        elif flags & P_LEAF2:
            yield from self._leaf2(offset, n, key_size, self.page_size)
        elif flags & P_LEAF:
            yield from self._leaf(offset, n, self.page_size)
        else:
            raise self._corrupt(f"page {root} is neither a branch nor a leaf")

    def _node_offset(self, page: int, i: int, size: int) -> int:
        rel = struct.unpack_from("<H", self._buf, page + HEADER + 2 * i)[0]
        if rel < HEADER or rel + NODE > size:
            raise self._corrupt(f"node {i} of the page at offset {page} outside it")
        return page + rel

    def _bytes(self, start: int, n: int, limit: int) -> bytes:
        if n < 0 or start + n > limit:
            raise self._corrupt(f"{n} bytes at offset {start} past their page")
        return bytes(self._view[start:start + n])

    def _leaf(self, page: int, n: int, size: int):
        for i in range(n):
            node = self._node_offset(page, i, size)
            lo, hi, flags, ksize = _node_header.unpack_from(self._buf, node)
            key = self._bytes(node + NODE, ksize, page + size)
            data, dsize = node + NODE + ksize, lo | hi << 16
            if flags & F_DUPDATA:
                for dup in self._duplicates(data, dsize, flags, page + size):
                    yield key, dup
            elif flags & F_BIGDATA:
                yield key, self._overflow(data, dsize, page + size)
            else:
                yield key, self._bytes(data, dsize, page + size)

    def _leaf2(self, page: int, n: int, key_size: int, size: int):
        start = page + HEADER
        if start + n * key_size > page + size:
            raise self._corrupt(f"{n} keys of {key_size} bytes past their page")
        for i in range(n):
            yield bytes(self._view[start + i * key_size:start + (i + 1) * key_size]), b""

    def _overflow(self, data: int, dsize: int, limit: int) -> bytes:
        pgno = struct.unpack_from("<Q", self._bytes(data, 8, limit))[0]
        offset = pgno * self.page_size
        if pgno < 2 or offset + HEADER > len(self._buf):
            raise self._corrupt(f"overflow page {pgno} outside the file")
        if not _page_header.unpack_from(self._buf, offset)[2] & P_OVERFLOW:
            raise self._corrupt(f"page {pgno} is not an overflow page")
        return self._bytes(offset + HEADER, dsize, len(self._buf))

    def _duplicates(self, data: int, dsize: int, flags: int, limit: int):
        """The sorted duplicate values of one key (DUPSORT): a sub-tree or a sub-page."""
        raw = self._bytes(data, dsize, limit)
        if flags & F_SUBDATA:
            if dsize < DB_RECORD:
                raise self._corrupt("a duplicates record too short")
            record = _db_record.unpack_from(raw, 0)
            return (k for k, _ in self._tree(record[7], record[0], 1))
        if dsize < HEADER:
            raise self._corrupt("a duplicates sub-page too short")
        _, pad, pflags, lower, _ = _page_header.unpack_from(raw, 0)
        n = self._count(data, lower, dsize)
        if pflags & P_LEAF2:
            return (k for k, _ in self._leaf2(data, n, pad, dsize))
        return (k for k, _ in self._leaf(data, n, dsize))
