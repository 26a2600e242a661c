/* wip/alloc_decl.h: filled by its owner */
