//! rtvirt-host: read and change a real host: audit, thread discovery, journaled apply/revert.
