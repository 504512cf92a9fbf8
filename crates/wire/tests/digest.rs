//! Checksums and digests: catalogue check values, Python cross-checks, incremental feeding,
//! zero feeding and name resolution. No timings here (see benches/digest_speed.rs).

use bytewright_wire::digest::{Algo, CrcParams, DigestValue};

const CHECK: &[u8] = b"123456789";

fn named(name: &str) -> Algo {
    Algo::from_name(name).unwrap_or_else(|| panic!("unknown algorithm {name}"))
}

fn int(algo: &Algo, data: &[u8]) -> u64 {
    algo.digest(data).as_int().expect("integer result")
}

fn hex(algo: &Algo, data: &[u8]) -> String {
    let v = algo.digest(data);
    v.as_bytes()
        .expect("byte-string result")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The 10007-byte pattern used for the Python cross-checks:
/// `bytes((i * 7 + (i >> 5)) & 0xFF for i in range(10007))`.
fn pattern() -> Vec<u8> {
    (0..10007usize)
        .map(|i| ((i * 7 + (i >> 5)) & 0xFF) as u8)
        .collect()
}

/// Small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Bit-at-a-time reference CRC, straight from the Rocksoft model.
fn crc_reference(p: &CrcParams, data: &[u8]) -> u64 {
    let w = u32::from(p.width);
    let mask = u64::MAX >> (64 - w);
    let top = 1u64 << (w - 1);
    let refl = |v: u64| v.reverse_bits() >> (64 - w);
    let mut reg = p.init;
    for &byte in data {
        let byte = if p.refin { byte.reverse_bits() } else { byte };
        for i in (0..8).rev() {
            let bit = u64::from((byte >> i) & 1);
            let fb = ((reg & top) != 0) as u64 ^ bit;
            reg = (reg << 1) & mask;
            if fb != 0 {
                reg ^= p.poly;
            }
        }
    }
    if p.refout {
        reg = refl(reg);
    }
    (reg ^ p.xorout) & mask
}

/// Straightforward RFC 1071 checksum: big-endian words, odd byte padded with zero.
fn internet_reference(data: &[u8]) -> u64 {
    let mut sum: u64 = data
        .chunks(2)
        .map(|c| u64::from(c[0]) << 8 | u64::from(*c.get(1).unwrap_or(&0)))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !sum & 0xFFFF
}

/// Every named algorithm plus custom CRCs that take the table path at unusual widths.
fn all_algos() -> Vec<Algo> {
    let mut v: Vec<Algo> = Algo::names().iter().map(|n| named(n)).collect();
    v.extend(OTHER_CRCS.iter().map(|(_, p, _)| Algo::Crc(*p)));
    v
}

/// Further catalogue CRCs (name, params, check value for "123456789").
const OTHER_CRCS: &[(&str, CrcParams, u64)] = &[
    (
        "CRC-3/ROHC",
        CrcParams::new(3, 0x3, 0x7, true, true, 0),
        0x6,
    ),
    (
        "CRC-5/USB",
        CrcParams::new(5, 0x05, 0x1F, true, true, 0x1F),
        0x19,
    ),
    (
        "CRC-8/MAXIM-DOW",
        CrcParams::new(8, 0x31, 0, true, true, 0),
        0xA1,
    ),
    (
        "CRC-12/UMTS",
        CrcParams::new(12, 0x80F, 0, false, true, 0),
        0xDAF,
    ),
    (
        "CRC-16/GENIBUS",
        CrcParams::new(16, 0x1021, 0xFFFF, false, false, 0xFFFF),
        0xD64E,
    ),
    (
        "CRC-24/OPENPGP",
        CrcParams::new(24, 0x86_4CFB, 0xB7_04CE, false, false, 0),
        0x21_CF02,
    ),
    (
        "CRC-32/BZIP2",
        CrcParams::new(32, 0x04C1_1DB7, 0xFFFF_FFFF, false, false, 0xFFFF_FFFF),
        0xFC89_1918,
    ),
    (
        "CRC-32/MPEG-2",
        CrcParams::new(32, 0x04C1_1DB7, 0xFFFF_FFFF, false, false, 0),
        0x0376_E6E7,
    ),
    (
        "CRC-32/AUTOSAR",
        CrcParams::new(32, 0xF4AC_FB13, 0xFFFF_FFFF, true, true, 0xFFFF_FFFF),
        0x1697_D06A,
    ),
    (
        "CRC-64/ECMA-182",
        CrcParams::new(64, 0x42F0_E1EB_A9EA_3693, 0, false, false, 0),
        0x6C40_DF5F_0B49_7347,
    ),
    (
        "CRC-64/GO-ISO",
        CrcParams::new(64, 0x1B, u64::MAX, true, true, u64::MAX),
        0xB909_56C7_75A4_1001,
    ),
];

#[test]
fn named_check_values() {
    let expected: &[(&str, u64)] = &[
        ("crc8", 0xF4),
        ("crc16-ccitt", 0x29B1),
        ("crc16-xmodem", 0x31C3),
        ("crc16-kermit", 0x2189),
        ("crc16-arc", 0xBB3D),
        ("crc16-ibm", 0xBB3D),
        ("crc16-modbus", 0x4B37),
        ("crc32", 0xCBF4_3926),
        ("crc32c", 0xE306_9283),
        ("crc64-xz", 0x995D_C9BB_DF19_39FA),
        // python3 -c 'import zlib; print(hex(zlib.adler32(b"123456789")))'
        ("adler32", 0x091E_01DE),
        ("internet", 0xF62A),
    ];
    for &(name, check) in expected {
        assert_eq!(int(&named(name), CHECK), check, "{name}");
    }
    // Empty input: init ^ xorout (refin-reflected where it matters), 1 for Adler-32, and the
    // complement of a zero sum for the Internet checksum.
    let empty: &[(&str, u64)] = &[
        ("crc8", 0),
        ("crc16-ccitt", 0xFFFF),
        ("crc16-xmodem", 0),
        ("crc16-kermit", 0),
        ("crc16-arc", 0),
        ("crc16-modbus", 0xFFFF),
        ("crc32", 0),
        ("crc32c", 0),
        ("crc64-xz", 0),
        ("adler32", 1),
        ("internet", 0xFFFF),
    ];
    for &(name, value) in empty {
        assert_eq!(int(&named(name), b""), value, "{name} of empty input");
    }
}

#[test]
fn digest_check_values() {
    // python3 -c 'import hashlib; [print(hashlib.new(a, d).hexdigest()) for d in
    //   (b"", b"abc", b"123456789") for a in ("md5", "sha1", "sha256")]'
    let cases: &[(&str, &[u8], &str)] = &[
        ("md5", b"", "d41d8cd98f00b204e9800998ecf8427e"),
        ("sha1", b"", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        (
            "sha256",
            b"",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ),
        ("md5", b"abc", "900150983cd24fb0d6963f7d28e17f72"),
        ("sha1", b"abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        (
            "sha256",
            b"abc",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ),
        ("md5", CHECK, "25f9e794323b453885f5181f1b624d0b"),
        ("sha1", CHECK, "f7c3bc1d808e04732adf679965ccc34ca7ae3441"),
        (
            "sha256",
            CHECK,
            "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225",
        ),
    ];
    for &(name, data, want) in cases {
        let algo = named(name);
        assert_eq!(hex(&algo, data), want, "{name}({data:?})");
        assert_eq!(
            algo.digest(data).as_bytes().unwrap().len(),
            algo.output_len()
        );
    }
}

#[test]
fn python_cross_check_on_pattern() {
    // python3 -c 'import zlib, binascii, hashlib
    // d = bytes((i * 7 + (i >> 5)) & 0xFF for i in range(10007))
    // print(hex(zlib.crc32(d)), hex(zlib.adler32(d)), hex(binascii.crc_hqx(d, 0)),
    //       hex(binascii.crc_hqx(d, 0xFFFF)), hashlib.md5(d).hexdigest(),
    //       hashlib.sha1(d).hexdigest(), hashlib.sha256(d).hexdigest())'
    let d = pattern();
    assert_eq!(int(&named("crc32"), &d), 0x186F_24C1);
    assert_eq!(int(&named("adler32"), &d), 0x5E24_7611);
    assert_eq!(int(&named("crc16-xmodem"), &d), 0x0E08);
    assert_eq!(int(&named("crc16-ccitt"), &d), 0x8CE6);
    // RFC 1071 in Python: s = sum(int.from_bytes(d[i:i+2].ljust(2, b"\0"), "big")
    //   for i in range(0, len(d), 2)); fold s; ~s & 0xFFFF
    assert_eq!(int(&named("internet"), &d), 0x4044);
    assert_eq!(hex(&named("md5"), &d), "46390e0563f595ba9b35c4db7e2d0740");
    assert_eq!(
        hex(&named("sha1"), &d),
        "c6e4f541bb6dcfd0bbabbd4342ecaec40cfcbed3"
    );
    assert_eq!(
        hex(&named("sha256"), &d),
        "4c681da0de97f5d4d0e21316953226f177f74fe45093e48ce615d9ae36d012f3"
    );
}

#[test]
fn custom_params_reproduce_named_crcs() {
    // Written out by hand rather than through the CrcParams constants.
    let cases: &[(&str, CrcParams)] = &[
        (
            "crc8",
            CrcParams {
                width: 8,
                poly: 0x07,
                init: 0,
                refin: false,
                refout: false,
                xorout: 0,
            },
        ),
        (
            "crc16-ccitt",
            CrcParams {
                width: 16,
                poly: 0x1021,
                init: 0xFFFF,
                refin: false,
                refout: false,
                xorout: 0,
            },
        ),
        (
            "crc16-xmodem",
            CrcParams {
                width: 16,
                poly: 0x1021,
                init: 0,
                refin: false,
                refout: false,
                xorout: 0,
            },
        ),
        (
            "crc16-kermit",
            CrcParams {
                width: 16,
                poly: 0x1021,
                init: 0,
                refin: true,
                refout: true,
                xorout: 0,
            },
        ),
        (
            "crc16-arc",
            CrcParams {
                width: 16,
                poly: 0x8005,
                init: 0,
                refin: true,
                refout: true,
                xorout: 0,
            },
        ),
        (
            "crc16-modbus",
            CrcParams {
                width: 16,
                poly: 0x8005,
                init: 0xFFFF,
                refin: true,
                refout: true,
                xorout: 0,
            },
        ),
        (
            "crc32",
            CrcParams {
                width: 32,
                poly: 0x04C1_1DB7,
                init: 0xFFFF_FFFF,
                refin: true,
                refout: true,
                xorout: 0xFFFF_FFFF,
            },
        ),
        (
            "crc32c",
            CrcParams {
                width: 32,
                poly: 0x1EDC_6F41,
                init: 0xFFFF_FFFF,
                refin: true,
                refout: true,
                xorout: 0xFFFF_FFFF,
            },
        ),
        (
            "crc64-xz",
            CrcParams {
                width: 64,
                poly: 0x42F0_E1EB_A9EA_3693,
                init: u64::MAX,
                refin: true,
                refout: true,
                xorout: u64::MAX,
            },
        ),
    ];
    let d = pattern();
    for (name, p) in cases {
        let custom = Algo::Crc(*p);
        assert_eq!(custom, named(name), "{name}");
        assert_eq!(
            custom.name(),
            Some(if *name == "crc16-ibm" {
                "crc16-arc"
            } else {
                name
            })
        );
        assert_eq!(int(&custom, CHECK), int(&named(name), CHECK), "{name}");
        assert_eq!(int(&custom, &d), int(&named(name), &d), "{name}");
        // And the bit-serial reference agrees with whatever fast path runs.
        assert_eq!(
            int(&custom, &d),
            crc_reference(p, &d),
            "{name} vs reference"
        );
        assert_eq!(
            int(&custom, CHECK),
            crc_reference(p, CHECK),
            "{name} vs reference"
        );
    }
}

#[test]
fn other_catalogue_crcs() {
    let d = pattern();
    for (name, p, check) in OTHER_CRCS {
        assert_eq!(p.validate(), Ok(()), "{name}");
        let algo = Algo::Crc(*p);
        assert_eq!(algo.name(), None, "{name}");
        assert_eq!(
            crc_reference(p, CHECK),
            *check,
            "{name}: reference vs catalogue"
        );
        assert_eq!(int(&algo, CHECK), *check, "{name}");
        assert_eq!(
            int(&algo, b""),
            crc_reference(p, b""),
            "{name} of empty input"
        );
        assert_eq!(
            int(&algo, &d),
            crc_reference(p, &d),
            "{name} on the pattern"
        );
    }
}

#[test]
fn random_custom_params_match_reference() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for width in [1u8, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 63, 64] {
        for _ in 0..6 {
            let mask = u64::MAX >> (64 - u32::from(width));
            let p = CrcParams {
                width,
                poly: rng.next() & mask | 1,
                init: rng.next() & mask,
                refin: rng.next() & 1 == 1,
                refout: rng.next() & 1 == 1,
                xorout: rng.next() & mask,
            };
            let n = rng.below(80);
            let data = rng.bytes(n);
            assert_eq!(
                int(&Algo::Crc(p), &data),
                crc_reference(&p, &data),
                "{p:?} on {data:?}"
            );
        }
    }
}

#[test]
fn incremental_updates_equal_one_shot() {
    let mut rng = Rng(0xDEAD_BEEF_CAFE_F00D);
    for algo in all_algos() {
        for round in 0..40 {
            let len = if round < 30 {
                rng.below(100)
            } else {
                rng.below(5000)
            };
            let data = rng.bytes(len);
            let whole = algo.digest(&data);
            // Random split points, including empty and odd-length pieces.
            let mut h = algo.hasher();
            let mut at = 0;
            while at < data.len() {
                let step = (rng.below(40)).min(data.len() - at);
                h.update(&data[at..at + step]);
                at += step;
            }
            assert_eq!(h.finish(), whole, "{algo:?} len {len}");
            // Byte at a time.
            let mut h = algo.hasher();
            for b in &data {
                h.update(std::slice::from_ref(b));
            }
            assert_eq!(h.finish(), whole, "{algo:?} bytewise len {len}");
        }
    }
}

#[test]
fn internet_checksum_odd_chunk_boundaries() {
    let algo = named("internet");
    let mut rng = Rng(7);
    for len in 0..40 {
        let data = rng.bytes(len);
        let want = internet_reference(&data);
        assert_eq!(int(&algo, &data), want, "len {len}");
        // Every split into two and three pieces.
        for i in 0..=len {
            for j in i..=len {
                let mut h = algo.hasher();
                h.update(&data[..i]);
                h.update(&data[i..j]);
                h.update(&data[j..]);
                assert_eq!(
                    h.finish(),
                    DigestValue::Int(want),
                    "len {len} split {i},{j}"
                );
            }
        }
    }
    // Long buffers of 0xFF exercise the carries.
    for len in [4095, 4096, 65537, 1 << 20] {
        let data = vec![0xFF; len];
        assert_eq!(int(&algo, &data), internet_reference(&data), "0xFF x {len}");
        let data = rng.bytes(len);
        assert_eq!(
            int(&algo, &data),
            internet_reference(&data),
            "random x {len}"
        );
    }
}

#[test]
fn internet_checksum_rfc1071() {
    let algo = named("internet");
    // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2, so the checksum is 220d.
    let words = [0x00, 0x01, 0xF2, 0x03, 0xF4, 0xF5, 0xF6, 0xF7];
    assert_eq!(int(&algo, &words), 0x220D);
    // The stored value verifies: summing the data with the checksum in place gives zero.
    let mut with_sum = words.to_vec();
    with_sum.extend_from_slice(&0x220Du16.to_be_bytes());
    assert_eq!(int(&algo, &with_sum), 0);
    // And with the field zeroed (via update_zeros) the same value is reproduced.
    let mut h = algo.hasher();
    h.update(&words[..4]);
    h.update_zeros(2);
    h.update(&words[4..]);
    assert_eq!(h.finish(), DigestValue::Int(0x220D));
    // Odd length: the last byte is padded with a zero byte.
    assert_eq!(int(&algo, &[0x12]), !0x1200u64 & 0xFFFF);
    assert_eq!(
        int(&algo, &[0x12, 0x34, 0x56]),
        !(0x1234u64 + 0x5600) & 0xFFFF
    );
    // A real IPv4 header (checksum field b861 zeroed), the classic worked example.
    let hdr = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xC0, 0xA8, 0x00,
        0x01, 0xC0, 0xA8, 0x00, 0xC7,
    ];
    assert_eq!(int(&algo, &hdr), 0xB861);
}

#[test]
fn update_zeros_equals_zero_bytes() {
    let mut rng = Rng(42);
    for algo in all_algos() {
        for n in [
            0usize, 1, 2, 3, 7, 8, 9, 31, 4095, 4096, 4097, 10_000, 70_000,
        ] {
            for prefix_len in [0usize, 1, 5] {
                let prefix = rng.bytes(prefix_len);
                let n_suffix = rng.below(20);
                let suffix = rng.bytes(n_suffix);
                let mut a = algo.hasher();
                a.update(&prefix);
                a.update_zeros(n);
                a.update(&suffix);
                let mut b = algo.hasher();
                b.update(&prefix);
                b.update(&vec![0; n]);
                b.update(&suffix);
                assert_eq!(a.finish(), b.finish(), "{algo:?} n {n} prefix {prefix_len}");
            }
        }
    }
}

#[test]
fn names_resolve() {
    let names = Algo::names();
    assert_eq!(names.len(), 15);
    for name in names {
        let algo = named(name);
        assert_eq!(Algo::from_name(&name.to_uppercase()), Some(algo), "{name}");
        assert_eq!(
            Algo::from_name(&name.replace('-', "_")),
            Some(algo),
            "{name}"
        );
        let canonical = if *name == "crc16-ibm" {
            "crc16-arc"
        } else {
            name
        };
        assert_eq!(algo.name(), Some(canonical));
    }
    assert_eq!(
        Algo::from_name("CRC16_CCITT"),
        Some(Algo::Crc(CrcParams::CRC16_CCITT_FALSE))
    );
    assert_eq!(Algo::from_name("Sha256"), Some(Algo::Sha256));
    assert_eq!(Algo::from_name("crc16-ibm"), Algo::from_name("crc16-arc"));
    for bad in [
        "",
        "crc",
        "crc16",
        "crc16ccitt",
        "sha512",
        "sha-256",
        "md5 ",
        "crc32-c",
        "adler",
    ] {
        assert_eq!(Algo::from_name(bad), None, "{bad:?}");
    }
}

#[test]
fn output_len_and_kind() {
    let cases: &[(&str, usize, bool)] = &[
        ("crc8", 1, true),
        ("crc16-ccitt", 2, true),
        ("crc16-xmodem", 2, true),
        ("crc16-kermit", 2, true),
        ("crc16-arc", 2, true),
        ("crc16-modbus", 2, true),
        ("crc32", 4, true),
        ("crc32c", 4, true),
        ("crc64-xz", 8, true),
        ("adler32", 4, true),
        ("internet", 2, true),
        ("md5", 16, false),
        ("sha1", 20, false),
        ("sha256", 32, false),
    ];
    for &(name, len, is_int) in cases {
        let algo = named(name);
        assert_eq!(algo.output_len(), len, "{name}");
        assert_eq!(algo.is_integer(), is_int, "{name}");
        let v = algo.digest(CHECK);
        match v {
            DigestValue::Int(x) => {
                assert!(is_int, "{name}");
                assert!(
                    len == 8 || x < 1u64 << (8 * len),
                    "{name}: {x:#x} fits {len} bytes"
                );
            }
            DigestValue::Bytes(b) => {
                assert!(!is_int, "{name}");
                assert_eq!(b.len(), len, "{name}");
            }
        }
    }
    assert_eq!(
        Algo::Crc(CrcParams::new(12, 0x80F, 0, false, true, 0)).output_len(),
        2
    );
}

#[test]
fn invalid_params_are_reported() {
    assert!(CrcParams::new(0, 1, 0, false, false, 0).validate().is_err());
    assert!(CrcParams::new(65, 1, 0, false, false, 0)
        .validate()
        .is_err());
    assert!(CrcParams::new(8, 0x107, 0, false, false, 0)
        .validate()
        .is_err());
    assert!(CrcParams::new(16, 0x1021, 0x1_0000, false, false, 0)
        .validate()
        .is_err());
    assert!(Algo::Crc(CrcParams::new(8, 0x07, 0, false, false, 0x100))
        .validate()
        .is_err());
    assert_eq!(Algo::Md5.validate(), Ok(()));
    let r =
        std::panic::catch_unwind(|| Algo::Crc(CrcParams::new(0, 1, 0, false, false, 0)).hasher());
    assert!(r.is_err());
}

#[test]
fn hasher_clone_forks_state() {
    for algo in all_algos() {
        let mut h = algo.hasher();
        h.update(b"12345");
        let mut fork = h.clone();
        h.update(b"6789");
        fork.update(b"6789");
        assert_eq!(h.finish(), algo.digest(CHECK), "{algo:?}");
        assert_eq!(fork.finish(), algo.digest(CHECK), "{algo:?}");
    }
}
