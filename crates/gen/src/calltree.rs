//! The synthetic program: modules, functions, who calls whom, and what each
//! function allocates.
//!
//! The program is a service: `Program::Main` on the main thread and
//! `Worker::Run` on worker threads (reached through the framework's thread
//! start chain) both call into a tree of application functions spread over
//! one module per functional area. Application functions also call a fixed
//! set of framework functions (string formatting, collections, LINQ, I/O)
//! with the allocation sites those really have (`List<T>.set_Capacity`
//! allocates the backing array, `FileStream..ctor` a `SafeFileHandle`).
//! The call graph is acyclic, so stacks stay bounded.

use super::names::{self, AREAS, COMPANY};
use super::options::PointerBits;
use super::rng::Rng;
use super::types::{Finalizer, TypeCatalog};

/// A module (assembly) of the program.
#[derive(Clone, Debug)]
pub struct Module {
    /// Full path, as an `m` line writes it.
    pub path: String,
    /// The assembly name, as a `y` line writes it.
    pub assembly: String,
    /// Load address.
    pub load_address: u64,
}

/// One allocation site: a type and the site's typical length, as a
/// multiple of the type's mean length (a site allocates similar sizes:
/// one function builds short keys, another fills 4 KB buffers).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Site {
    /// Type index in the catalog.
    pub ty: usize,
    /// Typical length relative to the type's mean (mean 1 over sites).
    pub factor: f64,
}

/// Where a function allocates: sites with integer weights.
#[derive(Clone, Debug, Default)]
pub struct Sites {
    types: Vec<u32>,
    factors: Vec<f32>,
    cumulative: Vec<u32>,
}

impl Sites {
    fn push(&mut self, rng: &mut Rng, ty: usize, weight: u32) {
        let total = self.total();
        self.types.push(ty as u32);
        // Mean 1: most sites allocate shortish strings and arrays, a fifth
        // of them long ones.
        let factor = if rng.chance(0.8) { rng.exponential(0.5) } else { rng.exponential(3.0) };
        self.factors.push(factor.max(0.02) as f32);
        self.cumulative.push(total + weight.max(1));
    }

    fn total(&self) -> u32 {
        self.cumulative.last().copied().unwrap_or(0)
    }

    /// The types with their weights.
    pub fn iter(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        let mut prev = 0;
        self.types.iter().zip(&self.cumulative).map(move |(&t, &c)| {
            let w = c - prev;
            prev = c;
            (t as usize, w)
        })
    }
}

/// A function of the program.
#[derive(Clone, Debug)]
pub struct Function {
    /// `Namespace.Class::Method`.
    pub name: String,
    /// Signature as CLRProfiler writes it.
    pub signature: String,
    /// Index into [`CallTree::modules`].
    pub module: usize,
    /// Bytes of jitted code.
    pub code_size: u32,
    /// Functions this one calls.
    pub callees: Vec<u32>,
    /// What it allocates.
    pub sites: Sites,
    /// Chance that an allocation with this function on top happens here
    /// rather than after more calls (low for functions that allocate OS
    /// resources, which programs call rarely).
    pub intensity: f64,
}

/// The whole program.
pub struct CallTree {
    /// Modules; 0 is `mscorlib`.
    pub modules: Vec<Module>,
    /// Functions.
    pub functions: Vec<Function>,
    /// The main thread's root chain (`Program::Main`).
    pub main_chain: Vec<u32>,
    /// A worker thread's root chain (thread start ... `Worker::Run`).
    pub worker_chain: Vec<u32>,
    /// What the simulation reads at every call and allocation, packed
    /// (one 16-byte entry per function, callees and sites in two pools).
    hot: Vec<FnHot>,
    callee_pool: Vec<u32>,
    site_pool: Vec<SiteEntry>,
}

/// A function's hot data: where its callees and sites are in the pools.
#[derive(Clone, Copy, Debug)]
struct FnHot {
    callees: u32,
    sites: u32,
    n_callees: u16,
    n_sites: u16,
    intensity: f32,
}

/// A site in the pool: cumulative weight, type, length factor.
#[derive(Clone, Copy, Debug)]
struct SiteEntry {
    cumulative: u32,
    ty: u32,
    factor: f32,
}

/// A framework function: name, signature, module, callees (indices into
/// this table), allocated types with weights.
struct Lib {
    /// How likely application code is to call it directly (0: never).
    weight: u32,
    name: &'static str,
    sig: &'static str,
    module: usize,
    callees: &'static [usize],
    sites: &'static [(&'static str, u32)],
}

const THREAD_START: usize = 0;
const THREAD_START_CONTEXT: usize = 3;
/// The first library function application code may call.
const FIRST_ENTRY: usize = 4;

const LIBRARY: &[Lib] = &[
    Lib { weight: 0, name: "System.Threading.ThreadHelper::ThreadStart", sig: "void ()", module: 0, callees: &[1], sites: &[] },
    Lib {
        weight: 0,
        name: "System.Threading.ExecutionContext::RunInternal",
        sig: "static void (class System.Threading.ExecutionContext class System.Threading.ContextCallback Object bool)",
        module: 0,
        callees: &[2],
        sites: &[],
    },
    Lib {
        weight: 0,
        name: "System.Threading.ExecutionContext::Run",
        sig: "static void (class System.Threading.ExecutionContext class System.Threading.ContextCallback Object bool)",
        module: 0,
        callees: &[3],
        sites: &[],
    },
    Lib { weight: 0, name: "System.Threading.ThreadHelper::ThreadStart_Context", sig: "static void (Object)", module: 0, callees: &[], sites: &[] },
    Lib { weight: 12, name: "System.String::Concat", sig: "static String (String String)", module: 0, callees: &[], sites: &[("System.String", 1)] },
    Lib {
        weight: 10,
        name: "System.String::Format",
        sig: "static String (class System.IFormatProvider String Object[])",
        module: 0,
        callees: &[6, 7, 8],
        sites: &[("System.String", 1)],
    },
    Lib {
        weight: 4,
        name: "System.Text.StringBuilder::.ctor",
        sig: "void (int32)",
        module: 0,
        callees: &[],
        sites: &[("System.Text.StringBuilder", 1), ("System.Char []", 1)],
    },
    Lib { weight: 8, name: "System.Text.StringBuilder::Append", sig: "class System.Text.StringBuilder (String)", module: 0, callees: &[9], sites: &[] },
    Lib { weight: 6, name: "System.Text.StringBuilder::ToString", sig: "String ()", module: 0, callees: &[], sites: &[("System.String", 1)] },
    Lib {
        weight: 0,
        name: "System.Text.StringBuilder::ExpandByABlock",
        sig: "void (int32)",
        module: 0,
        callees: &[],
        sites: &[("System.Text.StringBuilder", 1), ("System.Char []", 1)],
    },
    Lib {
        weight: 5,
        name: "System.String::Split",
        sig: "String[] (wchar[] int32 value class System.StringSplitOptions)",
        module: 0,
        callees: &[],
        sites: &[("System.String []", 1), ("System.Int32 []", 1), ("System.String", 4)],
    },
    Lib { weight: 8, name: "System.String::Substring", sig: "String (int32 int32)", module: 0, callees: &[], sites: &[("System.String", 1)] },
    Lib { weight: 12, name: "System.Collections.Generic.List`1::Add", sig: "void (!0)", module: 0, callees: &[13], sites: &[] },
    Lib { weight: 0, name: "System.Collections.Generic.List`1::EnsureCapacity", sig: "void (int32)", module: 0, callees: &[14], sites: &[] },
    Lib {
        weight: 0,
        name: "System.Collections.Generic.List`1::set_Capacity",
        sig: "void (int32)",
        module: 0,
        callees: &[],
        sites: &[("System.Object []", 2), ("System.String []", 1)],
    },
    Lib { weight: 8, name: "System.Collections.Generic.Dictionary`2::Insert", sig: "void (!0 !1 bool)", module: 0, callees: &[16, 17], sites: &[] },
    Lib {
        weight: 0,
        name: "System.Collections.Generic.Dictionary`2::Initialize",
        sig: "void (int32)",
        module: 0,
        callees: &[],
        sites: &[("System.Collections.Generic.Dictionary<T,U>.Entry []", 1), ("System.Int32 []", 1)],
    },
    Lib {
        weight: 0,
        name: "System.Collections.Generic.Dictionary`2::Resize",
        sig: "void (int32 bool)",
        module: 0,
        callees: &[],
        sites: &[("System.Collections.Generic.Dictionary<T,U>.Entry []", 1), ("System.Int32 []", 1)],
    },
    Lib {
        weight: 3,
        name: "System.Collections.Generic.Dictionary`2::.ctor",
        sig: "void (int32 class System.Collections.Generic.IEqualityComparer`1<!0>)",
        module: 0,
        callees: &[16],
        sites: &[("System.Collections.Generic.Dictionary<T,U>", 1)],
    },
    Lib {
        weight: 5,
        name: "System.Linq.Enumerable::ToList",
        sig: "static class System.Collections.Generic.List`1<!!0> (class System.Collections.Generic.IEnumerable`1<!!0>)",
        module: 2,
        callees: &[20, 12],
        sites: &[("System.Collections.Generic.List<T>", 1)],
    },
    Lib {
        weight: 0,
        name: "System.Collections.Generic.List`1::.ctor",
        sig: "void (class System.Collections.Generic.IEnumerable`1<!0>)",
        module: 0,
        callees: &[],
        sites: &[("System.Collections.Generic.List<T>", 1), ("System.Object []", 1)],
    },
    Lib {
        weight: 5,
        name: "System.Linq.Enumerable::Select",
        sig: "static class System.Collections.Generic.IEnumerable`1<!!1> (class System.Collections.Generic.IEnumerable`1<!!0> class System.Func`2<!!0,!!1>)",
        module: 2,
        callees: &[],
        sites: &[("System.Linq.Enumerable.WhereSelectListIterator<TSource,TResult>", 1), ("System.Func<T,TResult>", 1)],
    },
    Lib {
        weight: 5,
        name: "System.Linq.Enumerable::Where",
        sig: "static class System.Collections.Generic.IEnumerable`1<!!0> (class System.Collections.Generic.IEnumerable`1<!!0> class System.Func`2<!!0,bool>)",
        module: 2,
        callees: &[],
        sites: &[("System.Linq.Enumerable.WhereSelectListIterator<TSource,TResult>", 1), ("System.Func<T,TResult>", 1)],
    },
    Lib { weight: 6, name: "System.Int32::ToString", sig: "String ()", module: 0, callees: &[], sites: &[("System.String", 1)] },
    Lib {
        weight: 3,
        name: "System.DateTime::ToString",
        sig: "String (String)",
        module: 0,
        callees: &[],
        sites: &[("System.String", 2), ("System.Char []", 1)],
    },
    Lib { weight: 4, name: "System.Text.Encoding::GetBytes", sig: "unsigned int8[] (String)", module: 0, callees: &[], sites: &[("System.Byte []", 1)] },
    Lib {
        weight: 2,
        name: "System.Convert::ToBase64String",
        sig: "static String (unsigned int8[])",
        module: 0,
        callees: &[],
        sites: &[("System.String", 2), ("System.Char []", 1)],
    },
    Lib {
        weight: 1,
        name: "System.IO.FileStream::.ctor",
        sig: "void (String value class System.IO.FileMode value class System.IO.FileAccess)",
        module: 0,
        callees: &[28],
        sites: &[("System.IO.FileStream", 1), ("System.Byte []", 1)],
    },
    Lib {
        weight: 0,
        name: "Microsoft.Win32.Win32Native::SafeCreateFile",
        sig: "static class Microsoft.Win32.SafeHandles.SafeFileHandle (String int32 value class System.IO.FileShare)",
        module: 0,
        callees: &[],
        sites: &[("Microsoft.Win32.SafeHandles.SafeFileHandle", 1)],
    },
    Lib { weight: 2, name: "System.IO.MemoryStream::ToArray", sig: "unsigned int8[] ()", module: 0, callees: &[], sites: &[("System.Byte []", 1)] },
    Lib {
        weight: 2,
        name: "System.IO.MemoryStream::.ctor",
        sig: "void (int32)",
        module: 0,
        callees: &[],
        sites: &[("System.IO.MemoryStream", 1), ("System.Byte []", 1)],
    },
    Lib {
        weight: 3,
        name: "System.Threading.Tasks.Task::Run",
        sig: "static class System.Threading.Tasks.Task`1<!!0> (class System.Func`1<!!0>)",
        module: 0,
        callees: &[],
        sites: &[("System.Threading.Tasks.Task<TResult>", 1), ("System.Func<T,TResult>", 1)],
    },
    Lib {
        weight: 3,
        name: "System.Text.RegularExpressions.Regex::Match",
        sig: "class System.Text.RegularExpressions.Match (String)",
        module: 1,
        callees: &[],
        sites: &[("System.Text.RegularExpressions.Match", 1), ("System.Int32 []", 1)],
    },
    Lib {
        weight: 2,
        name: "System.Xml.XmlDocument::CreateElement",
        sig: "class System.Xml.XmlElement (String)",
        module: 3,
        callees: &[],
        sites: &[("System.Xml.XmlElement", 1), ("System.String", 1)],
    },
    Lib {
        weight: 1,
        name: "System.Threading.EventWaitHandle::.ctor",
        sig: "void (bool value class System.Threading.EventResetMode)",
        module: 0,
        callees: &[],
        sites: &[("System.Threading.ManualResetEvent", 1), ("Microsoft.Win32.SafeHandles.SafeWaitHandle", 1)],
    },
    Lib {
        weight: 1,
        name: "System.Net.Sockets.Socket::.ctor",
        sig: "void (value class System.Net.Sockets.AddressFamily value class System.Net.Sockets.SocketType)",
        module: 1,
        callees: &[],
        sites: &[("System.Net.Sockets.Socket", 1)],
    },
    Lib { weight: 3, name: "System.Guid::NewGuid", sig: "static value class System.Guid ()", module: 0, callees: &[], sites: &[("System.Guid", 1)] },
    Lib { weight: 3, name: "System.Object::MemberwiseClone", sig: "Object ()", module: 0, callees: &[], sites: &[("System.Object", 1)] },
    Lib {
        weight: 1,
        name: "System.Threading.ReaderWriterLock::.ctor",
        sig: "void ()",
        module: 0,
        callees: &[],
        sites: &[("System.Threading.ReaderWriterLock", 1)],
    },
];

/// How deep the application tree goes.
const MAX_APP_LEVEL: u32 = 9;
/// [`Function::intensity`] of functions that allocate OS resources.
const RESOURCE_INTENSITY: f64 = 0.25;

impl CallTree {
    /// Builds a program of about `functions` functions.
    pub fn new(rng: &mut Rng, types: &TypeCatalog, functions: u32, areas: usize, bits: PointerBits) -> CallTree {
        let areas = areas.clamp(1, AREAS.len());
        let framework = match bits {
            PointerBits::Bits32 => "C:\\Windows\\Microsoft.NET\\Framework\\v4.0.30319\\",
            PointerBits::Bits64 => "C:\\Windows\\Microsoft.NET\\Framework64\\v4.0.30319\\",
        };
        let app_dir = format!("C:\\Services\\{COMPANY}\\");
        let image_base: u64 = match bits {
            PointerBits::Bits32 => 0x7100_0000,
            PointerBits::Bits64 => 0x0000_7FFE_4A1C_0000,
        };
        let mut modules = Vec::new();
        for (k, lib) in ["mscorlib", "System", "System.Core", "System.Xml"].iter().enumerate() {
            modules.push(Module {
                path: format!("{framework}{lib}.dll"),
                assembly: lib.to_string(),
                load_address: image_base + k as u64 * 0x0200_0000,
            });
        }
        let exe = modules.len();
        modules.push(Module {
            path: format!("{app_dir}{COMPANY}.Server.exe"),
            assembly: format!("{COMPANY}.Server"),
            load_address: image_base - 0x3000_0000,
        });
        let first_area_module = modules.len();
        for (k, area) in AREAS.iter().take(areas).enumerate() {
            modules.push(Module {
                path: format!("{app_dir}{COMPANY}.{area}.dll"),
                assembly: format!("{COMPANY}.{area}"),
                load_address: image_base - 0x2000_0000 + k as u64 * 0x0010_0000,
            });
        }

        let mut fns: Vec<Function> = Vec::new();
        let mut unique = names::Unique::default();
        for lib in LIBRARY {
            let mut sites = Sites::default();
            for &(name, w) in lib.sites {
                if let Some(t) = types.find(name) {
                    sites.push(rng, t, w);
                }
            }
            unique.make(lib.name.to_string());
            let resource = sites.iter().any(|(t, _)| types.spec(t).finalizer != Finalizer::None);
            fns.push(Function {
                intensity: if resource { RESOURCE_INTENSITY } else { 1.0 },
                name: lib.name.to_string(),
                signature: lib.sig.to_string(),
                module: lib.module,
                code_size: 40 + rng.below(400) as u32,
                callees: lib.callees.iter().map(|&c| c as u32).collect(),
                sites,
            });
        }
        let main = fns.len() as u32;
        fns.push(Function {
            name: format!("{COMPANY}.Server.Program::Main"),
            signature: "static void (String[])".to_string(),
            module: exe,
            code_size: 167,
            callees: Vec::new(),
            sites: Sites::default(),
            intensity: 1.0,
        });
        let worker = fns.len() as u32;
        fns.push(Function {
            name: format!("{COMPANY}.Server.Worker::Run"),
            signature: "void ()".to_string(),
            module: exe,
            code_size: 132,
            callees: Vec::new(),
            sites: Sites::default(),
            intensity: 1.0,
        });
        fns[THREAD_START_CONTEXT].callees.push(worker);

        // The application tree, breadth first until the budget is spent.
        // Each entry: function index, level, area.
        let budget = (functions as usize).saturating_sub(fns.len()).max(4);
        let mut level_of: Vec<u32> = vec![0; fns.len()];
        let mut area_of: Vec<usize> = vec![0; fns.len()];
        let mut class_of: Vec<String> = vec![String::new(); fns.len()];
        let mut queue = std::collections::VecDeque::new();
        let top = (areas * 2).min(budget);
        for k in 0..top {
            let area = k % areas;
            let f = new_app_function(rng, types, &mut unique, &mut fns, first_area_module + area, area, None);
            level_of.push(1);
            area_of.push(area);
            class_of.push(class_part(&fns[f as usize].name));
            fns[main as usize].callees.push(f);
            fns[worker as usize].callees.push(f);
            queue.push_back(f);
        }
        let mut made = top;
        while let Some(parent) = queue.pop_front() {
            if made >= budget {
                break;
            }
            let level = level_of[parent as usize];
            if level >= MAX_APP_LEVEL {
                continue;
            }
            let children = 2 + rng.below(4) as usize;
            for _ in 0..children {
                if made >= budget {
                    break;
                }
                let parent_area = area_of[parent as usize];
                let area = if rng.chance(0.8) { parent_area } else { rng.index(areas) };
                let class = if area == parent_area && rng.chance(0.4) {
                    Some(class_of[parent as usize].clone())
                } else {
                    None
                };
                let f = new_app_function(rng, types, &mut unique, &mut fns, first_area_module + area, area, class);
                level_of.push(level + 1);
                area_of.push(area);
                class_of.push(class_part(&fns[f as usize].name));
                fns[parent as usize].callees.push(f);
                queue.push_back(f);
                made += 1;
            }
        }
        // Shared helpers (calls to deeper application functions) and calls
        // into the framework.
        let app_start = worker as usize + 1;
        let n = fns.len();
        for f in app_start..n {
            if rng.chance(0.15) {
                let candidates: Vec<u32> =
                    (app_start..n).filter(|&g| level_of[g] > level_of[f]).map(|g| g as u32).collect();
                if !candidates.is_empty() {
                    let g = candidates[rng.index(candidates.len())];
                    if !fns[f].callees.contains(&g) {
                        fns[f].callees.push(g);
                    }
                }
            }
            let lib_calls = rng.below(4);
            for _ in 0..lib_calls {
                let g = pick_library(rng) as u32;
                if !fns[f].callees.contains(&g) {
                    fns[f].callees.push(g);
                }
            }
        }
        let mut tree = CallTree {
            modules,
            functions: fns,
            main_chain: vec![main],
            worker_chain: vec![THREAD_START as u32, 1, 2, THREAD_START_CONTEXT as u32, worker],
            hot: Vec::new(),
            callee_pool: Vec::new(),
            site_pool: Vec::new(),
        };
        tree.pack();
        tree
    }

    /// Builds the packed hot data from `functions`.
    fn pack(&mut self) {
        for f in &self.functions {
            let callees = self.callee_pool.len() as u32;
            self.callee_pool.extend_from_slice(&f.callees);
            let sites = self.site_pool.len() as u32;
            for k in 0..f.sites.types.len() {
                self.site_pool.push(SiteEntry {
                    cumulative: f.sites.cumulative[k],
                    ty: f.sites.types[k],
                    factor: f.sites.factors[k],
                });
            }
            self.hot.push(FnHot {
                callees,
                sites,
                n_callees: f.callees.len().min(u16::MAX as usize) as u16,
                n_sites: f.sites.types.len().min(u16::MAX as usize) as u16,
                intensity: f.intensity as f32,
            });
        }
    }

    /// The functions `f` calls.
    #[inline]
    pub fn callees(&self, f: u32) -> &[u32] {
        let h = &self.hot[f as usize];
        &self.callee_pool[h.callees as usize..h.callees as usize + h.n_callees as usize]
    }

    /// How likely an allocation with `f` on top happens there.
    #[inline]
    pub fn intensity(&self, f: u32) -> f64 {
        self.hot[f as usize].intensity as f64
    }

    /// Draws one of `f`'s allocation sites (None if it has none).
    #[inline]
    pub fn pick_site(&self, f: u32, rng: &mut Rng) -> Option<Site> {
        let h = &self.hot[f as usize];
        if h.n_sites == 0 {
            return None;
        }
        let sites = &self.site_pool[h.sites as usize..h.sites as usize + h.n_sites as usize];
        let total = sites[sites.len() - 1].cumulative;
        let x = rng.below(total as u64) as u32;
        let e = sites.iter().find(|e| x < e.cumulative).unwrap_or(&sites[sites.len() - 1]);
        Some(Site { ty: e.ty as usize, factor: e.factor as f64 })
    }

}

/// A library function application code calls, by weight.
fn pick_library(rng: &mut Rng) -> usize {
    let total: u64 = LIBRARY.iter().map(|l| l.weight as u64).sum();
    let mut x = rng.below(total.max(1));
    for (k, l) in LIBRARY.iter().enumerate() {
        if x < l.weight as u64 {
            return k;
        }
        x -= l.weight as u64;
    }
    FIRST_ENTRY
}

fn class_part(name: &str) -> String {
    name.split("::").next().unwrap_or(name).to_string()
}

/// Adds one application function with its allocation sites.
fn new_app_function(
    rng: &mut Rng,
    types: &TypeCatalog,
    unique: &mut names::Unique,
    fns: &mut Vec<Function>,
    module: usize,
    area: usize,
    class: Option<String>,
) -> u32 {
    let class = class.unwrap_or_else(|| names::class_name(rng, AREAS[area]));
    let name = unique.make_function(&class, &names::method_name(rng));
    let mut sites = Sites::default();
    // Most application functions allocate their own entities, strings and
    // some arrays; a few allocate nothing themselves.
    if rng.chance(0.9) {
        let own = types.app_types(area);
        let generic = ["System.Object []", "System.Char []", "System.Byte []", "System.Int32 []", "System.Double []"];
        const FIXED_WEIGHT: u32 = 52;
        // Ordinary entities; types with finalizers are rare sites.
        let (plain, finalizable): (Vec<usize>, Vec<usize>) =
            own.iter().partition(|&&t| types.spec(t).finalizer == Finalizer::None);
        if !plain.is_empty() {
            let k = 1 + rng.below(2) as usize;
            for _ in 0..k {
                let t = plain[rng.index(plain.len())];
                sites.push(rng, t, FIXED_WEIGHT / k as u32);
            }
        } else if let Some(t) = types.find("System.Object") {
            sites.push(rng, t, FIXED_WEIGHT);
        }
        if !finalizable.is_empty() && rng.chance(0.1) {
            let t = finalizable[rng.index(finalizable.len())];
            sites.push(rng, t, 1);
        }
        if let Some(t) = types.find("System.String") {
            sites.push(rng, t, 28);
        }
        if let Some(t) = types.find(generic[rng.index(generic.len())]) {
            sites.push(rng, t, 20);
        }
    }
    fns.push(Function {
        name,
        signature: names::signature(rng),
        module,
        code_size: 60 + rng.below(900) as u32,
        callees: Vec::new(),
        sites,
        intensity: 1.0,
    });
    (fns.len() - 1) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_is_acyclic_and_sized() {
        let mut r = Rng::new(11);
        let types = TypeCatalog::new(&mut r, 8, 40, 4, true);
        let t = CallTree::new(&mut r, &types, 300, 4, PointerBits::Bits64);
        assert!(t.functions.len() >= 250 && t.functions.len() <= 310, "{}", t.functions.len());
        // Depth-first search with colors: no back edge.
        fn visit(t: &CallTree, f: usize, color: &mut Vec<u8>) -> bool {
            color[f] = 1;
            for &g in t.callees(f as u32) {
                let g = g as usize;
                if color[g] == 1 || (color[g] == 0 && !visit(t, g, color)) {
                    return false;
                }
            }
            color[f] = 2;
            true
        }
        let n = t.functions.len();
        let mut color = vec![0u8; n];
        for f in 0..n {
            if color[f] == 0 {
                assert!(visit(&t, f, &mut color), "cycle through {}", t.functions[f].name);
            }
        }
        for chain in [&t.main_chain, &t.worker_chain] {
            let last = *chain.last().unwrap() as usize;
            assert!(!t.functions[last].callees.is_empty());
            for w in chain.windows(2) {
                assert!(t.functions[w[0] as usize].callees.contains(&w[1]));
            }
        }
        assert!(t.functions.iter().all(|f| f.module < t.modules.len() && !f.name.contains(' ')));
    }
}
