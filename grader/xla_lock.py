"""XLA's own byte counts and buffer sizes, and every way into them: the names a lab locks while a
student's counting function runs (lab 1's counting exercises; lab 6's exercise 2 became an inverse
question whose forward model XLA may compute, and locks nothing), kept apart from the labs so that a
lab that locks them need not import another lab (or JAX) to name them."""

# XLA's own byte count, and every way into it: the public stages (compile, cost and memory
# analysis), the course's wrapper, and below them jaxlib's compile and cost-analysis entry points
# (each only where the installed JAX has it); a second copy of gpucourse.xla, or a helper pasted
# into the cell, still compiles through these
XLA_ANALYSES = (
    "gpucourse.xla.compiled",
    "jax.stages.Lowered.compile",
    "jax.stages.Lowered.cost_analysis",
    "jax.stages.Compiled.cost_analysis",
    "jax.stages.Compiled.memory_analysis",
)
XLA_INTERNALS = (
    # counts from the traced program, no compile: JAX's experimental roofline (locked where it
    # imports when the lock is set up; it needs absl): the twelfth attack answered gemv_cost with it
    "jax.experimental.roofline.roofline",
    "jax.experimental.roofline.roofline_and_grad",
    # a compiler's own instruction listing, counted (the twelfth attack counted numba's LLVM IR for
    # axpy_cost's complex FLOPs)
    "numba.core.dispatcher.Dispatcher.inspect_llvm",
    "numba.core.dispatcher.Dispatcher.inspect_asm",
    "numba.core.codegen.CPUCodeLibrary.get_llvm_str",
    "numba.core.codegen.CPUCodeLibrary.get_asm_str",
    "jax._src.compiler.backend_compile_and_load",
    "jax._src.compiler.backend_compile",
    "jax._src.compiler.compile_or_get_cached",
    "jax._src.interpreters.pxla.MeshComputation.cost_analysis",
    *(
        f"{lib}.{name}"
        for lib in ("jaxlib._jax", "jaxlib.xla_extension")
        for name in (
            "Client.compile",
            "Client.compile_and_load",
            "Client.compile_ifrt_program",
            "Client.compile_and_load_ifrt_program",
            "hlo_module_cost_analysis",
            "LoadedExecutable.cost_analysis",
            "LoadedExecutable.get_compiled_memory_stats",
            "Executable.cost_analysis",
            "Executable.get_compiled_memory_stats",
        )
    ),
)
