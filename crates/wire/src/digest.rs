//! Checksums and digests for wire codecs: CRCs (named or custom parameters), Adler-32, the
//! Internet checksum (RFC 1071), MD5, SHA-1 and SHA-256.
//!
//! An [`Algo`] is plain data (resolved from a name with [`Algo::from_name`] or built from
//! [`CrcParams`]); [`Algo::hasher`] gives an incremental [`Hasher`] whose [`Hasher::finish`]
//! yields a [`DigestValue`]. Feeding data in any number of [`Hasher::update`] calls gives the
//! same result as one call, and [`Hasher::update_zeros`] stands for a digest field whose own
//! bytes are taken as zero.
//!
//! Speed: CRC-32 uses `crc32fast` (PCLMULQDQ where available), CRC-32C the `crc32c` crate
//! (SSE 4.2 where available), every other CRC slice-by-16 tables built once per
//! (width, polynomial, reflection) and shared (u32 entries up to width 32, u64 above); Adler-32 uses `adler2`; the Internet checksum
//! sums 16 bytes per iteration into wide accumulators; the digests are RustCrypto's.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use md5::Digest as _;

/// Parameters of a CRC in the usual ("Rocksoft") model, as in the CRC catalogue.
///
/// `poly`, `init` and `xorout` are given unreflected, in the low `width` bits. `width` may be
/// any value from 1 to 64 (8, 16, 32 and 64 are the usual ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CrcParams {
    pub width: u8,
    pub poly: u64,
    pub init: u64,
    pub refin: bool,
    pub refout: bool,
    pub xorout: u64,
}

impl CrcParams {
    /// CRC-8/SMBUS ("crc8"), check 0xF4.
    pub const CRC8_SMBUS: CrcParams = CrcParams::new(8, 0x07, 0, false, false, 0);
    /// CRC-16/IBM-3740 a.k.a. CCITT-FALSE ("crc16-ccitt"), check 0x29B1.
    pub const CRC16_CCITT_FALSE: CrcParams = CrcParams::new(16, 0x1021, 0xFFFF, false, false, 0);
    /// CRC-16/XMODEM ("crc16-xmodem"), check 0x31C3.
    pub const CRC16_XMODEM: CrcParams = CrcParams::new(16, 0x1021, 0, false, false, 0);
    /// CRC-16/KERMIT ("crc16-kermit"), check 0x2189.
    pub const CRC16_KERMIT: CrcParams = CrcParams::new(16, 0x1021, 0, true, true, 0);
    /// CRC-16/ARC a.k.a. IBM ("crc16-arc", "crc16-ibm"), check 0xBB3D.
    pub const CRC16_ARC: CrcParams = CrcParams::new(16, 0x8005, 0, true, true, 0);
    /// CRC-16/MODBUS ("crc16-modbus"), check 0x4B37.
    pub const CRC16_MODBUS: CrcParams = CrcParams::new(16, 0x8005, 0xFFFF, true, true, 0);
    /// CRC-32/ISO-HDLC, as zlib ("crc32"), check 0xCBF43926.
    pub const CRC32: CrcParams =
        CrcParams::new(32, 0x04C1_1DB7, 0xFFFF_FFFF, true, true, 0xFFFF_FFFF);
    /// CRC-32/ISCSI a.k.a. Castagnoli ("crc32c"), check 0xE3069283.
    pub const CRC32C: CrcParams =
        CrcParams::new(32, 0x1EDC_6F41, 0xFFFF_FFFF, true, true, 0xFFFF_FFFF);
    /// CRC-64/XZ ("crc64-xz"), check 0x995DC9BBDF1939FA.
    pub const CRC64_XZ: CrcParams =
        CrcParams::new(64, 0x42F0_E1EB_A9EA_3693, u64::MAX, true, true, u64::MAX);

    pub const fn new(
        width: u8,
        poly: u64,
        init: u64,
        refin: bool,
        refout: bool,
        xorout: u64,
    ) -> Self {
        CrcParams {
            width,
            poly,
            init,
            refin,
            refout,
            xorout,
        }
    }

    /// Mask of the low `width` bits (all ones for width 64).
    pub fn mask(&self) -> u64 {
        u64::MAX >> (64 - u32::from(self.width.clamp(1, 64)))
    }

    /// Checks that `width` is 1..=64 and that `poly`, `init` and `xorout` fit in it.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=64).contains(&self.width) {
            return Err(format!(
                "CRC width must be 1 to 64 bits, got {}",
                self.width
            ));
        }
        let mask = self.mask();
        for (what, v) in [
            ("poly", self.poly),
            ("init", self.init),
            ("xorout", self.xorout),
        ] {
            if v & !mask != 0 {
                return Err(format!(
                    "CRC {what} {v:#x} does not fit in {} bits",
                    self.width
                ));
            }
        }
        Ok(())
    }
}

/// A checksum or digest algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Algo {
    Crc(CrcParams),
    Adler32,
    /// The Internet checksum of RFC 1071.
    Internet,
    Md5,
    Sha1,
    Sha256,
}

/// Every accepted name (canonical spelling) with its algorithm; "crc16-ibm" is an alias.
const NAMED: &[(&str, Algo)] = &[
    ("crc8", Algo::Crc(CrcParams::CRC8_SMBUS)),
    ("crc16-ccitt", Algo::Crc(CrcParams::CRC16_CCITT_FALSE)),
    ("crc16-xmodem", Algo::Crc(CrcParams::CRC16_XMODEM)),
    ("crc16-kermit", Algo::Crc(CrcParams::CRC16_KERMIT)),
    ("crc16-arc", Algo::Crc(CrcParams::CRC16_ARC)),
    ("crc16-ibm", Algo::Crc(CrcParams::CRC16_ARC)),
    ("crc16-modbus", Algo::Crc(CrcParams::CRC16_MODBUS)),
    ("crc32", Algo::Crc(CrcParams::CRC32)),
    ("crc32c", Algo::Crc(CrcParams::CRC32C)),
    ("crc64-xz", Algo::Crc(CrcParams::CRC64_XZ)),
    ("adler32", Algo::Adler32),
    ("internet", Algo::Internet),
    ("md5", Algo::Md5),
    ("sha1", Algo::Sha1),
    ("sha256", Algo::Sha256),
];

const NAMES: &[&str] = &[
    "crc8",
    "crc16-ccitt",
    "crc16-xmodem",
    "crc16-kermit",
    "crc16-arc",
    "crc16-ibm",
    "crc16-modbus",
    "crc32",
    "crc32c",
    "crc64-xz",
    "adler32",
    "internet",
    "md5",
    "sha1",
    "sha256",
];

/// `name` equals the canonical `canon`, ignoring ASCII case and taking '_' as '-'.
fn name_eq(name: &str, canon: &str) -> bool {
    name.len() == canon.len()
        && name.bytes().zip(canon.bytes()).all(|(a, b)| {
            let a = if a == b'_' {
                b'-'
            } else {
                a.to_ascii_lowercase()
            };
            a == b
        })
}

impl Algo {
    /// Resolves a name (see [`Algo::names`]); case-insensitive, '_' and '-' alike.
    pub fn from_name(name: &str) -> Option<Algo> {
        NAMED
            .iter()
            .find(|(n, _)| name_eq(name, n))
            .map(|&(_, a)| a)
    }

    /// Every name [`Algo::from_name`] accepts, in canonical spelling (for suggestions).
    pub fn names() -> &'static [&'static str] {
        NAMES
    }

    /// The canonical name of this algorithm, if it has one (custom CRCs that match a named
    /// one get that name; "crc16-arc" rather than its alias).
    pub fn name(&self) -> Option<&'static str> {
        NAMED.iter().find(|(_, a)| a == self).map(|&(n, _)| n)
    }

    /// Bytes of the result: `ceil(width / 8)` for CRCs, 4 for Adler-32, 2 for the Internet
    /// checksum, 16/20/32 for MD5/SHA-1/SHA-256.
    pub fn output_len(&self) -> usize {
        match self {
            Algo::Crc(p) => usize::from(p.width).div_ceil(8),
            Algo::Adler32 => 4,
            Algo::Internet => 2,
            Algo::Md5 => 16,
            Algo::Sha1 => 20,
            Algo::Sha256 => 32,
        }
    }

    /// Whether the result is an integer ([`DigestValue::Int`]: CRCs, Adler-32, Internet)
    /// rather than a byte string ([`DigestValue::Bytes`]: MD5, SHA-1, SHA-256).
    pub fn is_integer(&self) -> bool {
        matches!(self, Algo::Crc(_) | Algo::Adler32 | Algo::Internet)
    }

    /// Checks the parameters of a custom CRC (see [`CrcParams::validate`]); other algorithms
    /// are always valid.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Algo::Crc(p) => p.validate(),
            _ => Ok(()),
        }
    }

    /// A fresh incremental hasher.
    ///
    /// # Panics
    /// If the CRC parameters are invalid; call [`Algo::validate`] first on user input.
    pub fn hasher(&self) -> Hasher {
        let state = match *self {
            Algo::Crc(p) if p == CrcParams::CRC32 => State::Crc32(crc32fast::Hasher::new()),
            Algo::Crc(p) if p == CrcParams::CRC32C => State::Crc32c(0),
            Algo::Crc(p) => {
                if let Err(e) = p.validate() {
                    panic!("invalid CRC parameters: {e}");
                }
                State::Crc(CrcState::new(p))
            }
            Algo::Adler32 => State::Adler32(adler2::Adler32::new()),
            Algo::Internet => State::Internet { sum: 0, odd: false },
            Algo::Md5 => State::Md5(md5::Md5::new()),
            Algo::Sha1 => State::Sha1(sha1::Sha1::new()),
            Algo::Sha256 => State::Sha256(sha2::Sha256::new()),
        };
        Hasher { state }
    }

    /// One-shot convenience: `self.hasher()`, `update(data)`, `finish()`.
    pub fn digest(&self, data: &[u8]) -> DigestValue {
        let mut h = self.hasher();
        h.update(data);
        h.finish()
    }
}

/// The result of a [`Hasher`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DigestValue {
    /// CRCs, Adler-32 and the Internet checksum.
    Int(u64),
    /// MD5, SHA-1 and SHA-256.
    Bytes(Vec<u8>),
}

impl DigestValue {
    pub fn as_int(&self) -> Option<u64> {
        match self {
            DigestValue::Int(v) => Some(*v),
            DigestValue::Bytes(_) => None,
        }
    }

    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            DigestValue::Int(_) => None,
            DigestValue::Bytes(b) => Some(b),
        }
    }
}

/// An incremental checksum or digest computation; see [`Algo::hasher`].
#[derive(Clone)]
pub struct Hasher {
    state: State,
}

#[derive(Clone)]
enum State {
    Crc32(crc32fast::Hasher),
    /// Running (pre-inverted as `crc32c_append` expects) CRC-32C.
    Crc32c(u32),
    Crc(CrcState),
    Adler32(adler2::Adler32),
    /// `sum`: ones' complement contributions, each already folded to 16 bits and put in
    /// big-endian word order; `odd`: whether an odd number of bytes has been fed.
    Internet {
        sum: u64,
        odd: bool,
    },
    Md5(md5::Md5),
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
}

impl fmt::Debug for Hasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.state {
            State::Crc32(_) => "crc32",
            State::Crc32c(_) => "crc32c",
            State::Crc(_) => "crc",
            State::Adler32(_) => "adler32",
            State::Internet { .. } => "internet",
            State::Md5(_) => "md5",
            State::Sha1(_) => "sha1",
            State::Sha256(_) => "sha256",
        };
        f.debug_struct("Hasher")
            .field("algo", &kind)
            .finish_non_exhaustive()
    }
}

/// Zero bytes fed by [`Hasher::update_zeros`] to the algorithms with no shortcut.
static ZEROS: [u8; 4096] = [0; 4096];

impl Hasher {
    /// Feeds `data`.
    #[inline]
    pub fn update(&mut self, data: &[u8]) {
        match &mut self.state {
            State::Crc32(h) => h.update(data),
            State::Crc32c(c) => *c = crc32c::crc32c_append(*c, data),
            State::Crc(s) => s.update(data),
            State::Adler32(h) => h.write_slice(data),
            State::Internet { sum, odd } => {
                let s = ones_sum_le(data);
                // A chunk that starts at an even offset contributes its little-endian word
                // sum byte-swapped (RFC 1071 byte-order independence); one that starts at an
                // odd offset has its words shifted by one byte, so contributes it unswapped.
                let s = if *odd { s } else { s.swap_bytes() };
                *sum += u64::from(s);
                *odd ^= data.len() % 2 == 1;
            }
            State::Md5(h) => h.update(data),
            State::Sha1(h) => h.update(data),
            State::Sha256(h) => h.update(data),
        }
    }

    /// Feeds `n` zero bytes (the digest field's own bytes taken as zero), without allocating.
    pub fn update_zeros(&mut self, n: usize) {
        match &mut self.state {
            State::Adler32(h) => {
                // a is unchanged by a zero byte, and b grows by a for each.
                let c = h.checksum();
                let (a, b) = (u64::from(c & 0xFFFF), u64::from(c >> 16));
                let b = (b + (n as u64 % 65521) * a) % 65521;
                *h = adler2::Adler32::from_checksum(((b as u32) << 16) | a as u32);
            }
            State::Internet { odd, .. } => *odd ^= n % 2 == 1,
            _ => {
                let mut left = n;
                while left > 0 {
                    let k = left.min(ZEROS.len());
                    self.update(&ZEROS[..k]);
                    left -= k;
                }
            }
        }
    }

    /// The result: [`DigestValue::Int`] for CRCs, Adler-32 and the Internet checksum,
    /// [`DigestValue::Bytes`] for MD5, SHA-1 and SHA-256.
    pub fn finish(self) -> DigestValue {
        match self.state {
            State::Crc32(h) => DigestValue::Int(u64::from(h.finalize())),
            State::Crc32c(c) => DigestValue::Int(u64::from(c)),
            State::Crc(s) => DigestValue::Int(s.finish()),
            State::Adler32(h) => DigestValue::Int(u64::from(h.checksum())),
            State::Internet { sum, .. } => DigestValue::Int(u64::from(!fold16(sum) as u16)),
            State::Md5(h) => DigestValue::Bytes(h.finalize().to_vec()),
            State::Sha1(h) => DigestValue::Bytes(h.finalize().to_vec()),
            State::Sha256(h) => DigestValue::Bytes(h.finalize().to_vec()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Internet checksum (RFC 1071)

/// Folds a plain sum to 16 bits with end-around carries; nonzero stays nonzero.
#[inline]
fn fold16(mut x: u64) -> u64 {
    while x > 0xFFFF {
        x = (x & 0xFFFF) + (x >> 16);
    }
    x
}

/// Ones' complement sum of `data` read as little-endian 16-bit words from its start (a final
/// odd byte is the low byte of a word whose high byte is zero), folded to 16 bits.
///
/// Reading little-endian gives the byte-swap of the big-endian sum on every platform. The
/// hot loop adds 16 bytes per iteration as four 32-bit words into two 64-bit accumulators
/// (2^32 ≡ 1 modulo 2^16 - 1, so the 32-bit words fold to the same sum).
fn ones_sum_le(data: &[u8]) -> u16 {
    // Each 16-byte iteration adds less than 2^34 in all; 2^28 iterations per block keeps the
    // accumulators far from overflow.
    const BLOCK: usize = 16 << 28;
    let mut total = 0u64;
    for block in data.chunks(BLOCK) {
        let (mut a, mut b) = (0u64, 0u64);
        let mut chunks = block.chunks_exact(16);
        for c in &mut chunks {
            let w = |i: usize| u64::from(u32::from_le_bytes([c[i], c[i + 1], c[i + 2], c[i + 3]]));
            a += w(0) + w(4);
            b += w(8) + w(12);
        }
        let mut s = fold16(a) + fold16(b);
        let mut pairs = chunks.remainder().chunks_exact(2);
        for p in &mut pairs {
            s += u64::from(u16::from_le_bytes([p[0], p[1]]));
        }
        if let [last] = pairs.remainder() {
            s += u64::from(*last);
        }
        total += fold16(s);
    }
    fold16(total) as u16
}

// ---------------------------------------------------------------------------------------------
// Table-driven CRC, any width 1..=64
//
// Reflected CRCs keep the register reflected in the low `width` bits and eat bytes from the
// least significant end; the others keep it in the top `width` bits of a u64 ("aligned") and
// eat bytes from the most significant end. Either way sixteen bytes are folded per step with
// sixteen 256-entry tables (slice-by-16): `t[k][b]` is the register contribution of byte `b`
// followed by `k` zero bytes. Widths up to 32 use u32 copies of the tables (the low bits of
// the reflected register, the top 32 bits of the aligned one) to halve their cache footprint.

enum CrcTable {
    /// Widths up to 32: u32 entries (16 KiB), register in the low (reflected) or high
    /// (aligned) bits of a u32.
    Narrow(Box<[[u32; 256]; 16]>),
    Wide(Box<[[u64; 256]; 16]>),
}

impl CrcTable {
    fn build(width: u8, poly: u64, refin: bool) -> CrcTable {
        let mut t = Box::new([[0u64; 256]; 16]);
        if refin {
            let p = reflect(poly, width);
            for (b, e) in t[0].iter_mut().enumerate() {
                let mut c = b as u64;
                for _ in 0..8 {
                    c = if c & 1 != 0 { (c >> 1) ^ p } else { c >> 1 };
                }
                *e = c;
            }
            for k in 1..16 {
                for b in 0..256 {
                    let prev = t[k - 1][b];
                    t[k][b] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
                }
            }
        } else {
            let p = poly << (64 - u32::from(width));
            for (b, e) in t[0].iter_mut().enumerate() {
                let mut c = (b as u64) << 56;
                for _ in 0..8 {
                    c = if c >> 63 != 0 { (c << 1) ^ p } else { c << 1 };
                }
                *e = c;
            }
            for k in 1..16 {
                for b in 0..256 {
                    let prev = t[k - 1][b];
                    t[k][b] = (prev << 8) ^ t[0][(prev >> 56) as usize];
                }
            }
        }
        if width > 32 {
            return CrcTable::Wide(t);
        }
        let mut n = Box::new([[0u32; 256]; 16]);
        for (nk, tk) in n.iter_mut().zip(t.iter()) {
            for (e, &w) in nk.iter_mut().zip(tk.iter()) {
                *e = if refin { w as u32 } else { (w >> 32) as u32 };
            }
        }
        CrcTable::Narrow(n)
    }

    /// The shared table for these parameters, built on first use.
    fn get(p: &CrcParams) -> Arc<CrcTable> {
        type Key = (u8, u64, bool);
        // The named table-driven CRCs skip the lock.
        const FAST: [Key; 5] = [
            (8, 0x07, false),
            (16, 0x1021, false),
            (16, 0x1021, true),
            (16, 0x8005, true),
            (64, 0x42F0_E1EB_A9EA_3693, true),
        ];
        static FAST_TABLES: [OnceLock<Arc<CrcTable>>; 5] = [
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
        ];
        // Custom parameters come from schemas; keep a bounded number of their tables.
        const CACHE_MAX: usize = 64;
        static CACHE: OnceLock<Mutex<HashMap<Key, Arc<CrcTable>>>> = OnceLock::new();

        let key = (p.width, p.poly, p.refin);
        if let Some(i) = FAST.iter().position(|k| *k == key) {
            return FAST_TABLES[i]
                .get_or_init(|| Arc::new(CrcTable::build(key.0, key.1, key.2)))
                .clone();
        }
        let cache = CACHE.get_or_init(Default::default);
        if let Some(t) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return t.clone();
        }
        let table = Arc::new(CrcTable::build(key.0, key.1, key.2));
        let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() < CACHE_MAX {
            map.entry(key).or_insert_with(|| table.clone());
        }
        table
    }
}

/// Reverses the low `width` bits of `v`.
#[inline]
fn reflect(v: u64, width: u8) -> u64 {
    v.reverse_bits() >> (64 - u32::from(width))
}

#[derive(Clone)]
struct CrcState {
    table: Arc<CrcTable>,
    params: CrcParams,
    reg: u64,
}

impl CrcState {
    fn new(params: CrcParams) -> CrcState {
        let reg = if params.refin {
            reflect(params.init, params.width)
        } else {
            params.init << (64 - u32::from(params.width))
        };
        CrcState {
            table: CrcTable::get(&params),
            params,
            reg,
        }
    }

    #[inline]
    fn update(&mut self, data: &[u8]) {
        let refin = self.params.refin;
        self.reg = match &*self.table {
            CrcTable::Wide(t) if refin => crc_update_refl(t, self.reg, data),
            CrcTable::Wide(t) => crc_update_aligned(t, self.reg, data),
            CrcTable::Narrow(t) if refin => u64::from(crc32_update_refl(t, self.reg as u32, data)),
            CrcTable::Narrow(t) => {
                u64::from(crc32_update_aligned(t, (self.reg >> 32) as u32, data)) << 32
            }
        };
    }

    fn finish(&self) -> u64 {
        let p = &self.params;
        let v = if p.refin {
            if p.refout {
                self.reg
            } else {
                reflect(self.reg, p.width)
            }
        } else {
            let v = self.reg >> (64 - u32::from(p.width));
            if p.refout {
                reflect(v, p.width)
            } else {
                v
            }
        };
        (v ^ p.xorout) & p.mask()
    }
}

/// Byte `i` (0 = least significant) of `v`, as a table index.
#[inline(always)]
fn byte(v: u64, i: u32) -> usize {
    ((v >> (8 * i)) & 0xFF) as usize
}

/// Reflected register: the first byte of each block is the least significant.
fn crc_update_refl(t: &[[u64; 256]; 16], mut crc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(16);
    for c in &mut chunks {
        let x = crc ^ u64::from_le_bytes(c[..8].try_into().unwrap());
        let y = u64::from_le_bytes(c[8..].try_into().unwrap());
        crc = ((t[15][byte(x, 0)] ^ t[14][byte(x, 1)]) ^ (t[13][byte(x, 2)] ^ t[12][byte(x, 3)]))
            ^ ((t[11][byte(x, 4)] ^ t[10][byte(x, 5)]) ^ (t[9][byte(x, 6)] ^ t[8][byte(x, 7)]))
            ^ (((t[7][byte(y, 0)] ^ t[6][byte(y, 1)]) ^ (t[5][byte(y, 2)] ^ t[4][byte(y, 3)]))
                ^ ((t[3][byte(y, 4)] ^ t[2][byte(y, 5)]) ^ (t[1][byte(y, 6)] ^ t[0][byte(y, 7)])));
    }
    let mut rest = chunks.remainder();
    if rest.len() >= 8 {
        let x = crc ^ u64::from_le_bytes(rest[..8].try_into().unwrap());
        crc = ((t[7][byte(x, 0)] ^ t[6][byte(x, 1)]) ^ (t[5][byte(x, 2)] ^ t[4][byte(x, 3)]))
            ^ ((t[3][byte(x, 4)] ^ t[2][byte(x, 5)]) ^ (t[1][byte(x, 6)] ^ t[0][byte(x, 7)]));
        rest = &rest[8..];
    }
    for &b in rest {
        crc = (crc >> 8) ^ t[0][byte(crc ^ u64::from(b), 0)];
    }
    crc
}

/// Register in the top `width` bits: the first byte of each block is the most significant.
fn crc_update_aligned(t: &[[u64; 256]; 16], mut crc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(16);
    for c in &mut chunks {
        let x = crc ^ u64::from_be_bytes(c[..8].try_into().unwrap());
        let y = u64::from_be_bytes(c[8..].try_into().unwrap());
        crc = ((t[15][byte(x, 7)] ^ t[14][byte(x, 6)]) ^ (t[13][byte(x, 5)] ^ t[12][byte(x, 4)]))
            ^ ((t[11][byte(x, 3)] ^ t[10][byte(x, 2)]) ^ (t[9][byte(x, 1)] ^ t[8][byte(x, 0)]))
            ^ (((t[7][byte(y, 7)] ^ t[6][byte(y, 6)]) ^ (t[5][byte(y, 5)] ^ t[4][byte(y, 4)]))
                ^ ((t[3][byte(y, 3)] ^ t[2][byte(y, 2)]) ^ (t[1][byte(y, 1)] ^ t[0][byte(y, 0)])));
    }
    let mut rest = chunks.remainder();
    if rest.len() >= 8 {
        let x = crc ^ u64::from_be_bytes(rest[..8].try_into().unwrap());
        crc = ((t[7][byte(x, 7)] ^ t[6][byte(x, 6)]) ^ (t[5][byte(x, 5)] ^ t[4][byte(x, 4)]))
            ^ ((t[3][byte(x, 3)] ^ t[2][byte(x, 2)]) ^ (t[1][byte(x, 1)] ^ t[0][byte(x, 0)]));
        rest = &rest[8..];
    }
    for &b in rest {
        crc = (crc << 8) ^ t[0][byte(crc, 7) ^ usize::from(b)];
    }
    crc
}

/// Reflected register of at most 32 bits.
fn crc32_update_refl(t: &[[u32; 256]; 16], mut crc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(16);
    for c in &mut chunks {
        let x = crc ^ u32::from_le_bytes(c[..4].try_into().unwrap());
        let b = |i: usize| usize::from(c[i]);
        crc = ((t[15][(x & 0xFF) as usize] ^ t[14][((x >> 8) & 0xFF) as usize])
            ^ (t[13][((x >> 16) & 0xFF) as usize] ^ t[12][(x >> 24) as usize]))
            ^ ((t[11][b(4)] ^ t[10][b(5)]) ^ (t[9][b(6)] ^ t[8][b(7)]))
            ^ (((t[7][b(8)] ^ t[6][b(9)]) ^ (t[5][b(10)] ^ t[4][b(11)]))
                ^ ((t[3][b(12)] ^ t[2][b(13)]) ^ (t[1][b(14)] ^ t[0][b(15)])));
    }
    for &b in chunks.remainder() {
        crc = (crc >> 8) ^ t[0][((crc ^ u32::from(b)) & 0xFF) as usize];
    }
    crc
}

/// Register of at most 32 bits in the top bits of a u32.
fn crc32_update_aligned(t: &[[u32; 256]; 16], mut crc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(16);
    for c in &mut chunks {
        let x = crc ^ u32::from_be_bytes(c[..4].try_into().unwrap());
        let b = |i: usize| usize::from(c[i]);
        crc = ((t[15][(x >> 24) as usize] ^ t[14][((x >> 16) & 0xFF) as usize])
            ^ (t[13][((x >> 8) & 0xFF) as usize] ^ t[12][(x & 0xFF) as usize]))
            ^ ((t[11][b(4)] ^ t[10][b(5)]) ^ (t[9][b(6)] ^ t[8][b(7)]))
            ^ (((t[7][b(8)] ^ t[6][b(9)]) ^ (t[5][b(10)] ^ t[4][b(11)]))
                ^ ((t[3][b(12)] ^ t[2][b(13)]) ^ (t[1][b(14)] ^ t[0][b(15)])));
    }
    for &b in chunks.remainder() {
        crc = (crc << 8) ^ t[0][((crc >> 24) ^ u32::from(b)) as usize];
    }
    crc
}
