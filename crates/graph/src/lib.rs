//! The safe object-graph format behind `bytewright.pickle`.
