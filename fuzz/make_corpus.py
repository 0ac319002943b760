#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (fuzz/corpus/<target>/) in the
current wire formats (src/transport/tcp/wire.h, src/transport/push/frame.c) and tuning files.  Run it after a change of
the format: python3 fuzz/make_corpus.py.  Only the standard library."""
import os
import struct

VERSION = 5
DATA, HELLO, BYE, ABORT, REG, TABLE, AUTH, CANCEL, CLOSE = range(1, 10)
HERE = os.path.dirname(os.path.abspath(__file__))
JOB = 0x0123456789abcdef


def hdr(ftype, tag, length, magic=b'RDCL', chan=0):
    return magic + struct.pack('<BBHQQQ', VERSION, ftype, 0, tag, length, chan)


def hello(rank, size, job=JOB, number=0):
    return hdr(HELLO, rank | size << 32, 16) + struct.pack('<QQ', job, number)


def auth(step, payload):
    return hdr(AUTH, step, len(payload)) + payload


def prefix(world, rank, job=JOB):
    """The handshake target's input starts with: world - 1, rank, job id."""
    return bytes([world - 1, rank]) + struct.pack('<Q', job)


PDATA, PCANCEL, PABORT, PCLOSE, PBYE = range(1, 6)


def push(ftype, src, status, chan, tag, payload=b''):
    """A push transport message; the fuzz target's rank count is the
    first byte % 9 + 1, so src stays below it for these seeds."""
    return struct.pack('<IBBHiiQQ', 0x4d504352, 1, ftype, 0, src, status, chan, tag) + payload


SEEDS = {
    'frame': {
        'auth': auth(1, bytes(32)) + auth(2, bytes(64)) + auth(3, bytes(32)) + hdr(AUTH, 0, 0),
        'bad_magic': hdr(DATA, 0, 0, magic=b'XDCL'),
        'bye_abort': hdr(BYE, 0, 0) + hdr(ABORT, (1 << 64) - 4, 0),
        'data': hdr(DATA, 0x1234, 8, chan=8),
        'cancel_close': hdr(CANCEL, 5, 0, chan=12) + hdr(CLOSE, 0, 0, chan=12),
        'hello': hello(1, 4),
        'reg_table': hdr(REG, 2 | 4 << 32, 20 + 8) + bytes(28) + hdr(TABLE, 4, 12 + 4 * 20),
    },
    'handshake': {
        'bad_step': prefix(5, 1) + hello(0, 5) + auth(3, bytes(32)),
        # The harness takes the posted length from the first two bytes of
        # the last authentication payload (big-endian): 8 here.
        'full': prefix(5, 0) + hello(2, 5) + auth(1, bytes(32)) + auth(3, b'\x00\x08' + bytes(30)) +
                hdr(DATA, 5, 8) + bytes(range(8)) + hdr(DATA, 6, 8) + bytes(8),
        'hello_only': prefix(5, 0) + hello(2, 5),
        'no_auth': prefix(5, 0) + hello(1, 5) + hdr(DATA, 5, 8) + bytes(8),
        'wrong_size': prefix(5, 0) + hello(2, 6),
        'other_job': prefix(5, 0) + hello(2, 5, job=JOB + 1) + auth(1, bytes(32)),
    },
    'push': {
        'data': push(PDATA, 0, 0, 4, 0x1234, b'payload!'),
        'data_empty': push(PDATA, 0, 0, 0, 7),
        'cancel': push(PCANCEL, 0, -8, 8, 0),
        'abort': push(PABORT, 0, -8, 0, 0),
        'close': push(PCLOSE, 0, 0, 12, 0),
        'bye': push(PBYE, 0, 0, 0, 0),
        'bad_magic': b'XCPM' + push(PDATA, 0, 0, 0, 0)[4:],
    },
    # Tuning files (docs/tuning.md): entries of three and five numbers, a
    # malformed one of four.
    'tuning': {
        'five': b'# redcoll tuning file\ntcp 2.9e-05 3.2e-08 2.1e-10 1.8e-06 9.5e-11\n'
                b'default 1e-05 1e-09 2.5e-10\n',
        'three': b'threads 1.8e-06 9.5e-11 2.1e-10   # measured\n\n',
        'four': b'tcp 1 2 3 4\n',
    },
}

for target, seeds in SEEDS.items():
    d = os.path.join(HERE, 'corpus', target)
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, name), 'wb') as f:
            f.write(data)
