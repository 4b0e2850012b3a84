"""mechdyn: specialized multibody forward dynamics with a verification harness."""
