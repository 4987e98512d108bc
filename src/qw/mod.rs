//! QuakeWorld (protocol 28 with FTE/MVD extensions). Sans-IO: no files, no printing.
//! Reference: shared/specs/qw-protocol.md.
