"""The network: the model (the paper's Appendix A architecture), model files, KataGo model import
and export, the loss and the training step. The inputs it reads are ``common.encoding``'s.

Only this package imports torch among ``common``.
"""
