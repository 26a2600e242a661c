/* wip/trace_decl.h: filled by its owner */
