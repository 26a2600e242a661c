/* wip/model_impl.h: filled by its owner */
