"""KataGo's JSON analysis engine protocol on top of our search, for KaTrain and other tools.

``query`` reads and checks the queries (one JSON object per line on stdin), ``engine`` searches and
answers them (one JSON object per line on stdout), and ``katago`` reads KataGo's command line and
config files, so that programs which start ``katago analysis -model ... -config ...`` can start us
instead (the ``sente-katago`` command).
"""

from client.analysis.engine import AnalysisEngine, run_analysis
from client.analysis.query import AnalysisConfig

__all__ = ["AnalysisConfig", "AnalysisEngine", "run_analysis"]
