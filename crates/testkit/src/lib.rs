//! Test support shared by the workspace's tests (a dev-dependency only). Its own tests are the
//! workspace's tidy checks (`tests/tidy`): no module cycle in any crate, the invariants of
//! docs/ARCHITECTURE.md.
