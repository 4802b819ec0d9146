//! `nft -j list ruleset` compiled to the `nftables` crate's types, so a
//! saved dump is walked by the same walker as a live table.

use crate::error::ExplainError;
use nftables::TableContents;

/// The tables of an `nft -j list ruleset` dump.
pub fn tables(text: &str) -> Result<Vec<TableContents>, ExplainError> {
    let _ = text;
    Err(ExplainError::NftJson("not implemented yet".to_string()))
}
