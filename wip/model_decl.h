/* wip/model_decl.h: filled by its owner */
