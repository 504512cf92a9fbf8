//! The standard-pickle checker on hand-written streams: what passes, what is rejected, and
//! that no input makes it panic.

use bytewright_pickle_reader::{
    check, check_in, self_check, self_check_with, Build, Builtin, Call, ClassKind, ErrorKind,
    Global, Instr, Limits, NoExtras, Python2Str, Resolve, ResolveFailed, Scratch, Sink, Span, Step,
};

fn ok(data: &[u8]) -> Vec<Instr> {
    check(data, Limits::default(), NoExtras)
        .expect("accepted")
        .instrs
}

fn rejected(data: &[u8]) -> String {
    let e = check(data, Limits::default(), NoExtras).expect_err("rejected");
    assert_eq!(e.kind, ErrorKind::Malformed, "{e}");
    e.message
}

#[test]
fn protocol_2_list_with_memo() {
    // [1, "a", "a"] with the str memoized and fetched again.
    let data = b"\x80\x02]q\x00(K\x01X\x01\x00\x00\x00aq\x01h\x01e.";
    let instrs = ok(data);
    assert!(instrs.contains(&Instr::Append(3)));
    assert!(instrs.contains(&Instr::Get(1)));
}

#[test]
fn protocol_0_text_opcodes() {
    let instrs = ok(b"(lp0\nI12\naL123456789012345678901234567890L\naF1.5\naI01\na.");
    assert!(instrs.contains(&Instr::Int(12)));
    assert!(instrs.contains(&Instr::Bool(true)));
    assert!(instrs.contains(&Instr::Float(1.5)));
    assert!(instrs.iter().any(|i| matches!(i, Instr::LongText(_))));
}

#[test]
fn allowed_reduce_becomes_a_fixed_call() {
    let instrs = ok(b"cdatetime\ntimedelta\n(K\x01K\x02K\x03tR.");
    assert_eq!(
        instrs.last(),
        Some(&Instr::Call(Call::Std(Global::TimeDelta)))
    );
}

#[test]
fn pathlib_classes_read_under_the_module_python_3_13_names() {
    for module in ["pathlib", "pathlib._local"] {
        let data = format!("c{module}\nPurePosixPath\n(Va/b\ntR.");
        assert_eq!(
            ok(data.as_bytes()).last(),
            Some(&Instr::Call(Call::Std(Global::PurePosixPath)))
        );
    }
    assert_eq!(
        bytewright_pickle_reader::globals::canonical(Global::PosixPath),
        Some(("pathlib", "PosixPath"))
    );
}

#[test]
fn unknown_globals_are_rejected_with_their_name() {
    assert!(rejected(b"cos\nsystem\n(Vid\ntR.").contains("os.system"));
    assert!(rejected(b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93.").contains("builtins.eval"));
    assert!(rejected(b"cmymod\nUser\n.").contains("classes=[mymod.User]"));
}

#[test]
fn calls_outside_the_table_are_rejected() {
    // getattr other than ZoneInfo._unpickle, _codecs.encode with another codec.
    assert!(rejected(b"cbuiltins\ngetattr\n(czoneinfo\nZoneInfo\nVreset\ntR.").contains("getattr"));
    assert!(rejected(b"c_codecs\nencode\n(Vx\nVrot13\ntR.").contains("_codecs.encode"));
    assert!(rejected(b"]}b.").contains("BUILD on a list"));
    assert!(rejected(b"Vx\nQ.").contains("persistent"));
    assert!(rejected(b"(cbuiltins\ngetattr\nl.").contains("not allowed as a value"));
}

#[test]
fn types_exception_classes_and_not_implemented_are_values() {
    for data in [
        b"cbuiltins\nint\n.".as_slice(),
        b"(cbuiltins\nlist\ncbuiltins\nValueError\nl.",
        b"cexceptions\nStandardError\n.",
        b"\x80\x04\x8c\x08builtins\x8c\x0eNotImplemented\x93\x85.",
    ] {
        ok(data);
    }
    // A value is never called; `type` only as `type(x)`, how pickle writes `type(None)`.
    assert!(rejected(b"cbuiltins\nNotImplemented\n(Vx\ntR.").contains("REDUCE"));
    assert!(rejected(b"cbuiltins\ntype\n(Vx\nVy\ntR.").contains("REDUCE"));
    assert_eq!(
        ok(b"c__builtin__\ntype\n(NtR.").last(),
        Some(&Instr::Call(Call::Std(Global::Type)))
    );
}

/// `app.User` (no hooks) and `app.Hooked` (with `__setstate__`) are registered.
struct User;

impl Resolve for User {
    fn resolve(&mut self, module: &str, name: &str) -> Result<Option<Global>, ResolveFailed> {
        Ok(match (module, name) {
            ("app", "User") => Some(Global::Class(0, ClassKind::Object)),
            ("app", "Hooked") => Some(Global::Class(1, ClassKind::Object)),
            _ => None,
        })
    }

    fn has_setstate(&self, class: u32) -> bool {
        class == 1
    }
}

fn with_user(data: &[u8]) -> Vec<Instr> {
    check(data, Limits::default(), User)
        .expect("accepted")
        .instrs
}

#[test]
fn registered_classes_are_made_and_filled_by_build() {
    let instrs = with_user(b"\x80\x02capp\nUser\n)\x81}X\x01\x00\x00\x00aK\x01sb.");
    assert!(instrs.contains(&Instr::Call(Call::New(0))));
    assert!(instrs.contains(&Instr::Build(Build::Fields(0))));
    // protocols 0-1: copyreg's reconstructor with base object is a blank instance
    let instrs = with_user(b"ccopy_reg\n_reconstructor\n(capp\nUser\nc__builtin__\nobject\nNtR.");
    assert!(instrs.contains(&Instr::Call(Call::Blank(0))));
}

#[test]
fn registered_class_hooks_are_checked_calls() {
    // __reduce__ naming the class, with values: the class is called
    assert_eq!(
        with_user(b"capp\nUser\n(K\x01tR.").last(),
        Some(&Instr::Call(Call::Class(0)))
    );
    // ... never with a function global as an argument
    let e = check(
        b"capp\nUser\n(ccopyreg\n_reconstructor\ntR.",
        Limits::default(),
        User,
    );
    assert!(e
        .expect_err("rejected")
        .message
        .contains("only with values"));
    // __getnewargs__: NEWOBJ with arguments; __getnewargs_ex__: NEWOBJ_EX with keywords
    assert!(with_user(b"\x80\x02capp\nUser\nK\x01\x85\x81.").contains(&Instr::Call(Call::New(0))));
    let ex = b"\x80\x04capp\nUser\nK\x01\x85}X\x01\x00\x00\x00kK\x02s\x92.";
    assert!(with_user(ex).contains(&Instr::Call(Call::NewEx(0))));
    // copyreg.__newobj__ and __newobj_ex__ at protocols 0-1
    let instrs = with_user(b"ccopyreg\n__newobj__\n(capp\nUser\nK\x01tR.");
    assert!(instrs.contains(&Instr::Call(Call::NewObjFn(0))));
    let instrs = with_user(b"ccopyreg\n__newobj_ex__\n(capp\nUser\n)}tR.");
    assert!(instrs.contains(&Instr::Call(Call::NewObjExFn(0))));
    // a builtin base (a dict subclass at protocols 0-1), then its items
    let instrs =
        with_user(b"ccopy_reg\n_reconstructor\n(capp\nUser\nc__builtin__\ndict\n}tR(K\x01K\x02u.");
    assert!(instrs.contains(&Instr::Call(Call::Reconstruct(0))));
    assert!(instrs.contains(&Instr::SetItemsMapping(1)));
    let instrs = with_user(b"\x80\x02capp\nUser\n)\x81(K\x01K\x02e(K\x01\x90.");
    assert!(instrs.contains(&Instr::AppendMethod(2)));
    assert!(instrs.contains(&Instr::AddMethod(1)));
    // __setstate__: pickle's own BUILD, with any state
    let instrs = with_user(b"\x80\x02capp\nHooked\n)\x81K\x01K\x02\x86b.");
    assert!(instrs.contains(&Instr::Build(Build::Generic)));
    // the class itself as a value
    assert_eq!(
        with_user(b"capp\nUser\n."),
        vec![Instr::Global(Global::Class(0, ClassKind::Object))]
    );
    // without the resolver, none of it
    assert!(rejected(b"ccopyreg\n__newobj__\n(capp\nUser\ntR.").contains("classes="));
}

/// `User` whose `__new__` is `object.__new__`.
struct PlainNew;

impl Resolve for PlainNew {
    fn resolve(&mut self, module: &str, name: &str) -> Result<Option<Global>, ResolveFailed> {
        User.resolve(module, name)
    }

    fn plain_new(&self, class: u32) -> bool {
        class == 0
    }
}

#[test]
fn newobj_without_arguments_of_a_plain_class_is_a_blank_instance() {
    let instrs = check(b"\x80\x02capp\nUser\n)\x81.", Limits::default(), PlainNew)
        .expect("accepted")
        .instrs;
    assert!(instrs.contains(&Instr::Call(Call::Blank(0))));
    let instrs = check(
        b"\x80\x02capp\nUser\nK\x01\x85\x81.",
        Limits::default(),
        PlainNew,
    )
    .expect("accepted")
    .instrs;
    assert!(instrs.contains(&Instr::Call(Call::New(0))));
}

#[test]
fn builtin_types_are_called_with_plain_values_only() {
    let last = |data: &[u8]| ok(data).last().copied();
    assert_eq!(
        last(b"cbuiltins\nint\n)R."),
        Some(Instr::Call(Call::Std(Global::Builtin(Builtin::Int))))
    );
    assert_eq!(
        last(b"cbuiltins\nint\n)\x81."),
        Some(Instr::Call(Call::NewBuiltin(Builtin::Int)))
    );
    assert_eq!(
        last(b"cbuiltins\nlist\n(](K\x01etR."),
        Some(Instr::Call(Call::Std(Global::Builtin(Builtin::List))))
    );
    // Too many arguments: pickle's TypeError, whatever they are.
    let e = check(
        b"cbuiltins\nint\n(K\x01K\x02K\x03tR.",
        Limits::default(),
        NoExtras,
    );
    assert_eq!(e.expect_err("rejected").kind, ErrorKind::Type);
    // A codec by name, and containers once a class was named: refused.
    assert!(rejected(b"cbuiltins\nstr\n(C\x01xVutf-8\ntR.").contains("builtins.str"));
    let after_class = b"\x80\x02]q\x00capp\nUser\n)\x810cbuiltins\ntuple\nh\x00\x85R.";
    let e = check(after_class, Limits::default(), User).expect_err("rejected");
    assert!(e.message.contains("builtins.tuple"), "{}", e.message);
    // A str made by a call has no text the checks could read as a name.
    assert!(rejected(b"\x80\x04cbuiltins\nstr\n)R\x8c\x03int\x93.").contains("STACK_GLOBAL"));
}

/// Python 2 str read as pickle's `encoding=` says.
struct Python2(Python2Str);

impl Resolve for Python2 {
    fn resolve(&mut self, _: &str, _: &str) -> Result<Option<Global>, ResolveFailed> {
        Ok(None)
    }

    fn python2_str(&self) -> Python2Str {
        self.0
    }
}

#[test]
fn python2_str_follows_the_encoding() {
    let with = |mode, data: &[u8]| check(data, Limits::default(), Python2(mode)).map(|p| p.instrs);
    let raw = b"U\x02\xe9a.";
    assert!(with(Python2Str::Ascii, raw).is_err());
    assert_eq!(
        with(Python2Str::Bytes, raw).unwrap(),
        vec![Instr::Bytes(Span { start: 2, len: 2 })]
    );
    let decode = Python2Str::Decode { ascii_text: true };
    assert_eq!(
        with(decode, raw).unwrap(),
        vec![Instr::StrDecoded(Span { start: 2, len: 2 })]
    );
    assert_eq!(
        with(decode, b"U\x02ab.").unwrap(),
        vec![Instr::StrAscii(Span { start: 2, len: 2 })]
    );
    let quoted = b"S'\\xe9'\n.";
    assert_eq!(
        with(Python2Str::Bytes, quoted).unwrap(),
        vec![Instr::BytesQuoted(Span { start: 1, len: 6 })]
    );
    assert_eq!(
        with(decode, quoted).unwrap(),
        vec![Instr::StrQuotedDecoded(Span { start: 1, len: 6 })]
    );
}

#[test]
fn standard_library_values_from_the_table() {
    let last = |data: &[u8]| ok(data).last().copied();
    assert_eq!(
        last(b"ctime\nstruct_time\n((K\x01t}tR."),
        Some(Instr::Call(Call::Std(Global::StructSeq(0))))
    );
    assert_eq!(
        last(b"carray\n_array_reconstructor\n(carray\narray\nVi\nK\x08C\x00tR."),
        Some(Instr::Call(Call::Std(Global::ArrayReconstructor)))
    );
    let instrs = ok(b"\x80\x02cUserDict\nIterableUserDict\n)\x81}b.");
    assert!(instrs.contains(&Instr::Call(Call::BlankStd(Global::UserDict))));
    assert!(instrs.contains(&Instr::Build(Build::Attrs)));
    assert!(rejected(
        b"carray\n_array_reconstructor\n(ccollections\nOrderedDict\nVi\nK\x08C\x00tR."
    )
    .contains("REDUCE"));
}

#[test]
fn the_program_records_the_offset_of_each_instruction() {
    let data = b"\x80\x02]q\x00(K\x01cdatetime\ntimedelta\nK\x01K\x02K\x03\x87Re.";
    let p = check(data, Limits::default(), NoExtras).expect("accepted");
    let offsets = bytewright_pickle_reader::offsets(data, Limits::default(), NoExtras);
    assert_eq!(p.first, 0);
    assert_eq!(p.instrs.len(), offsets.len());
    let call = p
        .instrs
        .iter()
        .position(|i| matches!(i, Instr::Call(_)))
        .expect("a call");
    assert_eq!(data[offsets[call] as usize], b'R');
    // A sink that builds the list at once defers from the call on.
    let mut sink = UntilCall::default();
    let q = check_in(data, Limits::default(), &mut sink, &mut Scratch::default()).expect("ok");
    assert_eq!(q.first as usize, call);
    assert_eq!(q.instrs[0], p.instrs[call]);
}

#[test]
fn memo_and_stack_are_validated() {
    rejected(b"\x80\x02h\x05.");
    rejected(b"a.");
    rejected(b"(.");
    rejected(b"0.");
    // Like pickle, STOP takes the top value and ignores what is below it.
    assert!(check(b"NN.", Limits::default(), NoExtras).is_ok());
    assert!(check(b"(N.", Limits::default(), NoExtras).is_ok());
}

#[test]
fn errors_have_the_kinds_pickle_raises() {
    let kind = |data: &[u8]| check(data, Limits::default(), NoExtras).unwrap_err().kind;
    assert_eq!(kind(b""), ErrorKind::Truncated);
    assert_eq!(kind(b"\x80\x02"), ErrorKind::Truncated);
    assert_eq!(kind(b"K"), ErrorKind::Malformed);
    assert_eq!(kind(b"\x80\x06N."), ErrorKind::Value);
    assert_eq!(kind(b"I09\n."), ErrorKind::Value);
    assert_eq!(kind(b"F1e500\n."), ErrorKind::Overflow);
    assert_eq!(kind(b"]p-1\n."), ErrorKind::Value);
    assert_eq!(kind(b"K\x01)R."), ErrorKind::Type);
    assert_eq!(kind(b"(]Nd."), ErrorKind::Type);
    assert_eq!(kind(b"\x8f(]\x90."), ErrorKind::Type);
}

#[test]
fn limits_are_checked_before_allocating() {
    let huge = b"\x80\x04\x8e\xff\xff\xff\xff\xff\xff\xff\x7f.";
    assert!(check(huge, Limits::default(), NoExtras).is_err());
    let deep = [b"\x80\x02".as_slice(), &[b']'; 5000], &[b'a'; 4999], b"."].concat();
    let e = check(&deep, Limits::default(), NoExtras).expect_err("too deep");
    assert_eq!(e.kind, ErrorKind::Limit);
}

#[test]
fn no_truncation_or_byte_flip_panics() {
    let data = b"\x80\x04\x95\x20\x00\x00\x00\x00\x00\x00\x00]\x94(K\x01\x8c\x01a\x94h\x01\x8c\x08datetime\x8c\x04date\x93C\x04\x07\xe8\x01\x01\x85Re.";
    for end in 0..data.len() {
        let _ = check(&data[..end], Limits::default(), NoExtras);
    }
    for i in 0..data.len() {
        for flip in [1u8, 0x80, 0xff] {
            let mut m = data.to_vec();
            m[i] ^= flip;
            let _ = check(&m, Limits::default(), NoExtras);
        }
    }
}

/// A sink that performs everything but calls, and remembers what it performed.
#[derive(Default)]
struct UntilCall {
    done: Vec<Instr>,
    fail_on_float: bool,
}

impl Resolve for UntilCall {
    fn resolve(&mut self, _: &str, _: &str) -> Result<Option<Global>, ResolveFailed> {
        Ok(None)
    }
}

impl Sink for UntilCall {
    fn step(&mut self, instr: Instr, _: &[u8]) -> Step {
        match instr {
            Instr::Call(_) => Step::Defer,
            Instr::Float(_) if self.fail_on_float => Step::Failed,
            _ => {
                self.done.push(instr);
                Step::Done
            }
        }
    }
}

#[test]
fn the_sink_gets_checked_instructions_and_the_program_the_rest() {
    // [1, timedelta(1, 2, 3), 2]: everything before the call goes to the sink, the call
    // and everything after it into the program, once the whole stream has passed.
    let data = b"\x80\x02](K\x01cdatetime\ntimedelta\n(K\x01K\x02K\x03tRK\x02e.";
    let whole = check(data, Limits::default(), NoExtras)
        .expect("accepted")
        .instrs;
    let mut sink = UntilCall::default();
    let p = check_in(data, Limits::default(), &mut sink, &mut Scratch::default()).expect("ok");
    assert_eq!(
        p.instrs.first(),
        Some(&Instr::Call(Call::Std(Global::TimeDelta)))
    );
    assert_eq!([sink.done.as_slice(), &p.instrs].concat(), whole);
}

#[test]
fn a_later_rejection_is_reported_after_the_sink_built_a_prefix() {
    let data = b"\x80\x02](K\x01cos\nsystem\n(Vx\ntRe.";
    let mut sink = UntilCall::default();
    let e = check_in(data, Limits::default(), &mut sink, &mut Scratch::default())
        .expect_err("rejected");
    assert!(e.message.contains("os.system"), "{e}");
    assert!(sink.done.contains(&Instr::Int(1)));
}

#[test]
fn a_failing_sink_stops_the_machine() {
    let data = b"\x80\x02](K\x01G?\xf0\x00\x00\x00\x00\x00\x00e.";
    let mut sink = UntilCall {
        fail_on_float: true,
        ..UntilCall::default()
    };
    let e =
        check_in(data, Limits::default(), &mut sink, &mut Scratch::default()).expect_err("failed");
    assert_eq!(e.kind, ErrorKind::Malformed);
    assert!(!sink.done.iter().any(|i| matches!(i, Instr::Append(_))));
}

/// The machine's fast loop against its general loop: the same instructions, or the
/// same error.
fn same_both_ways(data: &[u8], limits: Limits) {
    if let Err(diff) = self_check(data, limits) {
        panic!("{data:?}: {diff}");
    }
}

#[test]
fn the_fast_loop_agrees_with_the_general_one() {
    // A list of records with memoized keys fetched again, every hot opcode and limit near.
    let records = b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00]\x94(}\x94(\x8c\x02id\x94K\x01\x8c\x01n\x94X\x02\x00\x00\x00ab\x94\x8c\x01f\x94G?\xf8\x00\x00\x00\x00\x00\x00\x8c\x01b\x94\x88\x8c\x01t\x94]\x94(h\x03j\x03\x00\x00\x00NM\xff\xffJ\xfe\xff\xff\xffC\x02\x00\x01\x89eu}q\x0ch\x02K\x02sh\x0c]\x94K\x07ae.";
    let globals = b"\x80\x04]\x94(}\x94\x8c\x08datetime\x8c\x04date\x93C\x04\x07\xe8\x01\x01\x85R\x94h\x01h\x02(K\x01tq\x10e.";
    let tight = Limits {
        max_depth: 3,
        max_items: 12,
        max_container_len: 4,
        max_str_len: 1,
        max_bytes_len: 1,
        ..Limits::default()
    };
    for data in [records.as_slice(), globals] {
        for limits in [Limits::default(), tight] {
            same_both_ways(data, limits);
            for end in 0..data.len() {
                same_both_ways(&data[..end], limits);
            }
            for i in 0..data.len() {
                for flip in [1u8, 2, 0x10, 0x80, 0xff] {
                    let mut m = data.to_vec();
                    m[i] ^= flip;
                    same_both_ways(&m, limits);
                }
            }
        }
    }
    assert!(check(records, Limits::default(), NoExtras).is_ok());
}

/// `User` with `object.__new__` (its instances take the fast loop) and `Hooked` with
/// `__setstate__` (whose take the general one).
struct FastUser;

impl Resolve for FastUser {
    fn resolve(&mut self, module: &str, name: &str) -> Result<Option<Global>, ResolveFailed> {
        User.resolve(module, name)
    }

    fn has_setstate(&self, class: u32) -> bool {
        User.has_setstate(class)
    }

    fn plain_new(&self, class: u32) -> bool {
        class == 0
    }
}

#[test]
fn the_fast_loop_agrees_with_the_general_one_on_registered_instances() {
    // Instances of a registered class as protocol 4 writes them (EMPTY_TUPLE, NEWOBJ,
    // BUILD with a dict or a (dict, slots) tuple), then one whose class has __setstate__.
    let data = b"\x80\x04\x95`\x00\x00\x00\x00\x00\x00\x00]\x94(\x8c\x03app\x94\x8c\x04User\x94\x93\x94)\x81\x94}\x94(\x8c\x01a\x94K\x01\x8c\x01b\x94]\x94(K\x02K\x03eubh\x03)\x81\x94}\x94(h\x06K\x04h\x07Nubh\x03)\x81\x94N}\x94\x86b\x8c\x03app\x94\x8c\x06Hooked\x94\x93\x94)\x81\x94K\x01be.";
    let instrs = check(data, Limits::default(), FastUser)
        .expect("accepted")
        .instrs;
    assert_eq!(
        instrs
            .iter()
            .filter(|i| **i == Instr::Build(Build::Fields(0)))
            .count(),
        3
    );
    assert!(instrs.contains(&Instr::Build(Build::Generic)));
    let tight = Limits {
        max_depth: 2,
        max_items: 20,
        max_container_len: 3,
        ..Limits::default()
    };
    let same = |data: &[u8], limits: Limits| {
        if let Err(diff) = self_check_with(data, limits, || FastUser) {
            panic!("{data:?}: {diff}");
        }
    };
    for limits in [Limits::default(), tight] {
        same(data, limits);
        for end in 0..data.len() {
            same(&data[..end], limits);
        }
        for i in 0..data.len() {
            for flip in [1u8, 2, 0x10, 0x80, 0xff] {
                let mut m = data.to_vec();
                m[i] ^= flip;
                same(&m, limits);
            }
        }
    }
}
