//! Schema compiler and pack/unpack VM for bytewright wire codecs.
