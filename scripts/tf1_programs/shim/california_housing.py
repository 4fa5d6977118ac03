"""Stand-in for sklearn's fetch_california_housing (which downloads): the same eight features
and target computed from the housing.csv that ageron/handson-ml ships (datasets/housing/; the
207 missing total_bedrooms filled with the median)."""
import csv
import types

import numpy as np

NAMES = ["MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude",
         "Longitude"]


def fetch_california_housing(data_home=None, download_if_missing=True, return_X_y=False):
    with open("datasets/housing/housing.csv") as f:
        rows = list(csv.DictReader(f))
    col = {k: np.array([float(r[k]) if r[k] else np.nan for r in rows])
           for k in rows[0] if k != "ocean_proximity"}
    bedrooms = col["total_bedrooms"]
    bedrooms = np.where(np.isnan(bedrooms), np.nanmedian(bedrooms), bedrooms)
    hh = col["households"]
    data = np.c_[col["median_income"], col["housing_median_age"], col["total_rooms"] / hh,
                 bedrooms / hh, col["population"], col["population"] / hh, col["latitude"],
                 col["longitude"]]
    target = col["median_house_value"] / 100000.0
    if return_X_y:
        return data, target
    return types.SimpleNamespace(data=data, target=target, feature_names=NAMES)
