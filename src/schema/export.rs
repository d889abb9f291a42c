//! lt declarations → JSON Schema tool definitions. (Being written.)
