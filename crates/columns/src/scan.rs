//! Sinks that keep nothing: one finds where messages end, one checks messages fully.

use std::convert::Infallible;

use bytewright_wire::host::Sink;

macro_rules! nothing_sink {
    ($(#[$doc:meta])* $name:ident, $keeps:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl Sink for $name {
            type Value = ();
            type Struct = ();
            type List = ();
            type Map = ();
            type Error = Infallible;
            const KEEPS_VALUES: bool = $keeps;

            #[inline(always)]
            fn uint(&mut self, _: u64) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn int(&mut self, _: i64) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn float(&mut self, _: f64) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn bool(&mut self, _: bool) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn bytes(&mut self, _: &[u8]) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn str(&mut self, _: &str, _: bool) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn latin1(&mut self, _: &[u8]) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn begin_struct(&mut self, _: u32) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn set_field(&mut self, _: &mut (), _: u16, _: ()) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn absent_field(&mut self, _: &mut (), _: u16) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn end_struct(&mut self, _: ()) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn none(&mut self) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn ext(&mut self, _: i8, _: &[u8]) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn begin_map(&mut self, _: usize) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn map_insert(&mut self, _: &mut (), _: (), _: ()) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn end_map(&mut self, _: ()) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn begin_list(&mut self, _: usize) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn push(&mut self, _: &mut (), _: ()) -> Result<(), Infallible> { Ok(()) }
            #[inline(always)]
            fn end_list(&mut self, _: ()) -> Result<(), Infallible> { Ok(()) }
        }
    };
}

nothing_sink!(
    /// Finds where a message ends: the VM reads only what sizes depend on.
    Scan,
    false
);

nothing_sink!(
    /// Checks a message as fully as a decode that keeps values (to report its error).
    Check,
    true
);
