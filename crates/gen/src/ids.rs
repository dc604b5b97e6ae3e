//! Function and type ids, numbered in order of first use (first call,
//! first allocation), as CLRProfiler's profiler numbers them. The
//! simulation assigns them (heap dumps need them); the profiler stage
//! writes each definition the first time it sees the id.

use super::error::GenError;
use clrprof::format::{FunctionId, TypeId};

/// Ids assigned so far (0: none yet).
pub struct Ids {
    functions: Vec<i32>,
    types: Vec<i32>,
    next_function: i32,
    next_type: i32,
}

impl Ids {
    /// No id assigned, for `functions` functions and `types` types.
    pub fn new(functions: usize, types: usize) -> Ids {
        Ids { functions: vec![0; functions], types: vec![0; types], next_function: 1, next_type: 1 }
    }

    /// The id of function `f`, assigned at its first call.
    #[inline]
    pub fn function(&mut self, f: usize) -> Result<FunctionId, GenError> {
        let id = self.functions[f];
        if id != 0 {
            return Ok(FunctionId(id));
        }
        let id = self.next_function;
        self.next_function = id.checked_add(1).ok_or(GenError::Limit("function"))?;
        self.functions[f] = id;
        Ok(FunctionId(id))
    }

    /// The id of type `ty`, assigned at its first allocation.
    #[inline]
    pub fn type_id(&mut self, ty: usize) -> TypeId {
        let id = self.types[ty];
        if id != 0 {
            return TypeId(id);
        }
        let id = self.next_type;
        self.next_type += 1;
        self.types[ty] = id;
        TypeId(id)
    }

    /// The id of a type that was allocated (None if never).
    pub fn known_type(&self, ty: usize) -> Option<TypeId> {
        match self.types[ty] {
            0 => None,
            id => Some(TypeId(id)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_first_use() {
        let mut ids = Ids::new(5, 5);
        assert_eq!(ids.function(3).unwrap(), FunctionId(1));
        assert_eq!(ids.function(0).unwrap(), FunctionId(2));
        assert_eq!(ids.function(3).unwrap(), FunctionId(1));
        assert_eq!(ids.type_id(4), TypeId(1));
        assert_eq!(ids.known_type(4), Some(TypeId(1)));
        assert_eq!(ids.known_type(2), None);
    }
}
