//! Test helpers shared by the crates' tests and the end-to-end suite:
//! network namespaces, upstream's test address conventions, the packet
//! tracer (re-exported from `explain`) and golden-file helpers. Never used by the binary.

pub mod builders;
pub mod cluster;
pub mod echo;
pub mod flows;
pub mod netns;
pub mod reference_node;
pub mod reference_scenario;
pub mod vm;
/// The packet tracer, now in the product crate `explain` (re-exported so
/// the tests keep their paths).
pub use explain::tracer;
