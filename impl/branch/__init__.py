"""Branches: independent lines of snapshots on one table (``branch/branch-<name>/``)."""

from impl.branch.manager import BranchInfo, BranchManager, check_branch_name

__all__ = ["BranchInfo", "BranchManager", "check_branch_name"]
