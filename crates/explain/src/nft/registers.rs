//! The register file of one rule evaluation: register 0 holds the
//! verdict, 1–4 are 16 bytes each and 8–23 the same bytes as 32-bit
//! registers (`NFT_REG32_00` is the start of register 1), as in the kernel.

use crate::error::ExplainError;
use nftables::Register;

/// Data registers, 64 bytes.
#[derive(Debug, Clone)]
pub(super) struct Registers {
    bytes: [u8; 64],
}

impl Default for Registers {
    fn default() -> Self {
        Self { bytes: [0; 64] }
    }
}

/// Byte offset of a data register.
fn offset(reg: Register) -> Result<usize, ExplainError> {
    match reg.0 {
        n @ 1..=4 => Ok((n as usize - 1) * 16),
        n @ 8..=23 => Ok((n as usize - 8) * 4),
        n => Err(ExplainError::Nftables(format!("register {n} is not a data register"))),
    }
}

impl Registers {
    /// Stores `data` at `reg`, zero-padded to a whole number of 32-bit
    /// registers.
    pub fn store(&mut self, reg: Register, data: &[u8]) -> Result<(), ExplainError> {
        let at = offset(reg)?;
        let padded = data.len().div_ceil(4) * 4;
        let slot = self
            .bytes
            .get_mut(at..at + padded)
            .ok_or_else(|| ExplainError::Nftables(format!("{} bytes do not fit at register {}", data.len(), reg.0)))?;
        slot.fill(0);
        slot[..data.len()].copy_from_slice(data);
        Ok(())
    }

    /// `len` bytes from `reg`.
    pub fn load(&self, reg: Register, len: usize) -> Result<&[u8], ExplainError> {
        let at = offset(reg)?;
        self.bytes
            .get(at..at + len)
            .ok_or_else(|| ExplainError::Nftables(format!("{len} bytes from register {} run past the registers", reg.0)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_32_bit_register_aliases_part_of_a_16_byte_one() {
        let mut regs = Registers::default();
        regs.store(Register(1), &[10, 96, 0, 1]).unwrap();
        regs.store(Register(9), &[6]).unwrap();
        assert_eq!(regs.load(Register(1), 8).unwrap(), &[10, 96, 0, 1, 6, 0, 0, 0]);
        assert_eq!(regs.load(Register(8), 4).unwrap(), &[10, 96, 0, 1]);
        assert!(regs.load(Register(0), 4).is_err());
        assert!(regs.load(Register(23), 8).is_err());
    }
}
