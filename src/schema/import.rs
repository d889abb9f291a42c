//! JSON Schema tool definitions → lt declarations. (Being written.)
