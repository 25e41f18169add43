"""The network: KataGo's input features (inputs version 7), the model (the paper's Appendix A
architecture), model files, KataGo model import, the loss.

Only this package imports torch among ``common``.
"""
