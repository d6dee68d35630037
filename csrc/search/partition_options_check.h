#pragma once
// The checks of PartitionOptions that every partition makes, with one wording.
#include <string>

#include "autograph/error.h"
#include "search/partition_by_min_cut.h"

namespace autograph {

inline void CheckPartitionOptions(const PartitionOptions& options, const std::string& who) {
  if (options.max_block_ops < 1)
    throw Error(who + ": max_block_ops is " + std::to_string(options.max_block_ops) +
                "; a block must be allowed at least 1 operator (PartitionOptions::max_block_ops >= 1)");
  if (options.max_block_states < 0)
    throw Error(who + ": max_block_states is " + std::to_string(options.max_block_states) +
                "; use 0 for no bound on the states of a block, or a positive bound");
  if (options.max_block_states > 0 && options.max_block_ops > 64)
    throw Error(who + ": max_block_ops is " + std::to_string(options.max_block_ops) +
                "; with max_block_states a block holds at most 64 operators");
}

}  // namespace autograph
