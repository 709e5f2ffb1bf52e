//! rtvirt-analysis: demand/supply bound functions, resource interfaces, probabilistic budgets, partitioning (pure math).
