"""The parts layer of the export path, below every compiler: cutting a graph into parts (cut), each part
as a module with example inputs (builder), its cost and the graph's structure (graph), the digest its
cache keys are made from (digest), a compiled part's profile by node (profile), and the program
rewritten to call the compiled parts, whichever compiler made each (rewrite). A compiler only compiles
the parts it is handed (compilers/)."""
from .builder import PartBuilder, example_of
from .cut import PARTS, closed, cut_between_kernels, cut_by_cost, launches, parts_of_plan, without_ops
from .digest import part_digest
from .graph import every_node, part_costs, topological, values_read, whole_graph_part
from .profile import MIN_NAMED, NOT_PROFILED, PROFILED_RUNS, NodeTimes, node_ms, run_profiled
from .rewrite import CompiledPart, part_spec, rewrite_with_parts

__all__ = ["MIN_NAMED", "NOT_PROFILED", "PARTS", "PROFILED_RUNS", "CompiledPart", "NodeTimes", "PartBuilder", "closed",
           "cut_between_kernels", "cut_by_cost",
           "every_node", "example_of", "launches", "node_ms", "part_costs", "part_digest", "part_spec", "parts_of_plan",
           "rewrite_with_parts", "run_profiled", "topological", "values_read", "whole_graph_part", "without_ops"]
