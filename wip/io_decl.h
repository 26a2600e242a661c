/* wip/io_decl.h: filled by its owner */
